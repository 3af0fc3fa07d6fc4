#include "trace/event_scanner.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace shardscope::trace {
namespace {

// Bytes that matter when finding the end of a value: 1 = opens, 2 = closes, 3 = quote.
constexpr std::array<uint8_t, 256> MakeClassTable() {
  std::array<uint8_t, 256> t{};
  t['{'] = 1;
  t['['] = 1;
  t['}'] = 2;
  t[']'] = 2;
  t['"'] = 3;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = MakeClassTable();

bool IsSpace(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A scalar ends at a delimiter or whitespace.
bool EndsScalar(char c) { return c == ',' || c == ']' || c == '}' || IsSpace(c); }

std::string Printable(int c) {
  if (c < 0) return "end of file";
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

constexpr size_t kMaxTopLevelValue = 64 << 20;  // otherData beyond this is skipped

enum class BlockScan { kComplete, kNeedMore, kEscape };

// The vector scan of a value that starts with '{' or '[': 64 bytes at a time,
// quotes give the string mask (prefix XOR) and brackets outside strings the
// depth. A backslash anywhere ends it with kEscape and the byte loop takes
// over, so the two always agree. Bytes up to 63 past `end` must be readable.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// Bit i set from each quote up to (not including) the next: inside a string.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Applies one block's brackets (outside strings) to *depth; true with *at set
// to the byte index where the depth returns to zero.
inline bool WalkBrackets(uint64_t opens, uint64_t closes, int* depth, int* at) {
  int n_close = __builtin_popcountll(closes);
  if (n_close < *depth) {  // cannot reach zero in this block
    *depth += __builtin_popcountll(opens) - n_close;
    return false;
  }
  for (uint64_t brackets = opens | closes; brackets != 0; brackets &= brackets - 1) {
    uint64_t bit = brackets & (~brackets + 1);
    if (opens & bit) {
      ++*depth;
    } else if (--*depth == 0) {
      *at = __builtin_ctzll(brackets);
      return true;
    }
  }
  return false;
}

inline uint64_t ValidMask(const char* block, const char* end) {
  size_t left = static_cast<size_t>(end - block);
  return left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1;
}

// Bit i set where byte i of the 64 bytes in v equals c.
inline uint64_t EqMask(const __m128i v[4], __m128i c) {
  uint64_t m0 = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[0], c)));
  uint64_t m1 = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[1], c)));
  uint64_t m2 = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[2], c)));
  uint64_t m3 = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[3], c)));
  return m0 | (m1 << 16) | (m2 << 32) | (m3 << 48);
}

// SSE2 (every x86-64).
BlockScan ScanContainerSse2(const char* p, const char* end, const char** value_end) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open = _mm_set1_epi8('{');   // '[' | 0x20 == '{'
  const __m128i close = _mm_set1_epi8('}');  // ']' | 0x20 == '}'
  const __m128i case_bit = _mm_set1_epi8(0x20);
  uint64_t in_string = 0;  // all ones when the previous block ended inside a string
  int depth = 0, at = 0;
  for (const char* block = p; block < end; block += 64) {
    __m128i v[4], folded[4];
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i));
      folded[i] = _mm_or_si128(v[i], case_bit);
    }
    uint64_t valid = ValidMask(block, end);
    if (EqMask(v, backslash) & valid) return BlockScan::kEscape;
    uint64_t strings = PrefixXor(EqMask(v, quote) & valid) ^ in_string;
    in_string = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    uint64_t code = valid & ~strings;
    if (WalkBrackets(EqMask(folded, open) & code, EqMask(folded, close) & code, &depth, &at)) {
      *value_end = block + at + 1;
      return BlockScan::kComplete;
    }
  }
  return BlockScan::kNeedMore;
}

// The same with AVX2, carry-less multiply for the prefix XOR and POPCNT.
__attribute__((target("avx2,pclmul,popcnt"))) inline uint64_t EqMask256(__m256i lo, __m256i hi,
                                                                        __m256i c) {
  uint64_t l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, c)));
  uint64_t h = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, c)));
  return l | (h << 32);
}

__attribute__((target("avx2,pclmul,popcnt"))) BlockScan ScanContainerAvx2(const char* p,
                                                                          const char* end,
                                                                          const char** value_end) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i case_bit = _mm256_set1_epi8(0x20);
  const __m128i all_ones = _mm_set1_epi8(-1);
  uint64_t in_string = 0;
  int depth = 0, at = 0;
  for (const char* block = p; block < end; block += 64) {
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32));
    uint64_t valid = ValidMask(block, end);
    if (EqMask256(lo, hi, backslash) & valid) return BlockScan::kEscape;
    uint64_t quotes = EqMask256(lo, hi, quote) & valid;
    uint64_t strings = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(
                           _mm_set_epi64x(0, static_cast<int64_t>(quotes)), all_ones, 0))) ^
                       in_string;
    in_string = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    __m256i flo = _mm256_or_si256(lo, case_bit), fhi = _mm256_or_si256(hi, case_bit);
    uint64_t code = valid & ~strings;
    if (WalkBrackets(EqMask256(flo, fhi, open) & code, EqMask256(flo, fhi, close) & code, &depth,
                     &at)) {
      *value_end = block + at + 1;
      return BlockScan::kComplete;
    }
  }
  return BlockScan::kNeedMore;
}

BlockScan ScanContainerBlocks(const char* p, const char* end, const char** value_end) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
                           __builtin_cpu_supports("popcnt");
  return avx2 ? ScanContainerAvx2(p, end, value_end) : ScanContainerSse2(p, end, value_end);
}
#else
BlockScan ScanContainerBlocks(const char*, const char*, const char**) {
  return BlockScan::kEscape;  // no vector path: the byte loop does it all
}
#endif

}  // namespace

EventScanner::EventScanner(ByteSource* source, std::string name, size_t chunk_bytes)
    : source_(source), name_(std::move(name)), chunk_bytes_(std::max<size_t>(chunk_bytes, 64)) {
  buf_.resize(chunk_bytes_ + kScannerPadding);
}

void EventScanner::ResumeInEvents(int64_t offset, bool array_form) {
  // One spare byte before the first event, as after a '[' (see the header).
  buf_[0] = ' ';
  pos_ = end_ = 1;
  base_ = offset - 1;
  array_form_ = array_form;
  saw_events_ = true;
  state_ = State::kArrayElement;
}

StatusOr<bool> EventScanner::Refill(size_t keep) {
  if (eof_) return false;
  if (before_refill_) before_refill_();
  if (keep > 1) {
    // Kept bytes go to index 1: buf_[0] stays a spare byte before any event.
    size_t kept = end_ - keep;
    std::memmove(buf_.data() + 1, buf_.data() + keep, kept);
    base_ += static_cast<int64_t>(keep - 1);
    pos_ -= keep - 1;
    end_ = 1 + kept;
  }
  if (buf_.size() - kScannerPadding - end_ < chunk_bytes_ / 2) {
    buf_.resize(2 * (buf_.size() - kScannerPadding) + kScannerPadding);  // a huge event
  }
  size_t room = buf_.size() - kScannerPadding - end_;
  ASSIGN_OR_RETURN(size_t n, source_->Read(buf_.data() + end_, room));
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += n;
  std::memset(buf_.data() + end_, 0, kScannerPadding);
  return true;
}

StatusOr<int> EventScanner::PeekNonSpace() {
  while (true) {
    while (pos_ < end_ && IsSpace(buf_[pos_])) ++pos_;
    if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
    ASSIGN_OR_RETURN(bool more, Refill(pos_));
    if (!more) return -1;
  }
}

EventScanner::Scan EventScanner::ScanValue(size_t start, size_t* end, bool* plain) const {
  *plain = false;
  const char* const data = buf_.data();
  const char* p = data + start;
  const char* const e = data + end_;
  char first = *p;
  if (first == '"') {
    ++p;
    while (p < e) {
      char c = *p++;
      if (c == '\\') {
        ++p;
      } else if (c == '"') {
        *end = static_cast<size_t>(p - data);
        return Scan::kComplete;
      }
    }
    return Scan::kNeedMore;
  }
  if (kClass[static_cast<unsigned char>(first)] != 1) {  // number, true, false, null, garbage
    while (p < e && !EndsScalar(*p)) ++p;
    if (p == e) return Scan::kNeedMore;
    *end = static_cast<size_t>(p - data);
    return p == data + start ? Scan::kError : Scan::kComplete;
  }
  const char* block_end = nullptr;
  switch (ScanContainerBlocks(p, e, &block_end)) {
    case BlockScan::kComplete:
      *end = static_cast<size_t>(block_end - data);
      *plain = first == '{';
      return Scan::kComplete;
    case BlockScan::kNeedMore:
      return Scan::kNeedMore;
    case BlockScan::kEscape:
      break;
  }
  int depth = 0;
  while (p < e) {
    uint8_t cls = kClass[static_cast<unsigned char>(*p++)];
    if (cls == 0) continue;
    if (cls == 1) {
      ++depth;
    } else if (cls == 2) {
      if (--depth == 0) {
        *end = static_cast<size_t>(p - data);
        return Scan::kComplete;
      }
    } else {  // a string: skip to its closing quote
      while (true) {
        while (p < e && *p != '"' && *p != '\\') ++p;
        if (p >= e) return Scan::kNeedMore;
        if (*p == '\\') {
          p += 2;
          continue;
        }
        ++p;
        break;
      }
    }
  }
  return Scan::kNeedMore;
}

Status EventScanner::TakeValue(size_t* start, size_t* end, std::string_view what) {
  while (true) {
    Scan s = ScanValue(pos_, end, &last_event_plain_);
    if (s == Scan::kComplete) {
      *start = pos_;
      pos_ = *end;
      return Status::Ok();
    }
    if (s == Scan::kError) {
      return InvalidArgument("{}: not a valid JSON trace: unexpected {} at byte {}", name_,
                             Printable(static_cast<unsigned char>(buf_[pos_])), Offset(pos_));
    }
    int64_t value_offset = Offset(pos_);
    ASSIGN_OR_RETURN(bool more, Refill(pos_));
    if (!more) {
      return DataLoss("{}: truncated at byte {}: {} starting at byte {} is incomplete", name_,
                      Offset(end_), what, value_offset);
    }
  }
}

Status EventScanner::Unexpected(std::string_view expected, int c) const {
  if (c < 0) {
    return DataLoss("{}: truncated at byte {}: expected {}", name_, Offset(end_), expected);
  }
  return InvalidArgument("{}: not a valid JSON trace: expected {} at byte {}, found {}", name_,
                         expected, Offset(pos_), Printable(c));
}

StatusOr<bool> EventScanner::Next(std::string_view* event, int64_t* offset, size_t* capacity) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == 0xEF && end_ - pos_ >= 3 && std::memcmp(&buf_[pos_], "\xEF\xBB\xBF", 3) == 0) {
          pos_ += 3;  // UTF-8 byte order mark
          continue;
        }
        if (c < 0) {
          return InvalidArgument("{}: empty file{}", name_,
                                 Offset(end_) > 0 ? " (only whitespace)" : "");
        }
        if (c == '{') {
          state_ = State::kObjectKey;
        } else if (c == '[') {
          array_form_ = true;
          saw_events_ = true;
          state_ = State::kArrayElement;
        } else {
          return InvalidArgument("{}: not a JSON trace: expected '{{' or '[' at byte {}, found {}",
                                 name_, Offset(pos_), Printable(c));
        }
        ++pos_;
        break;
      }
      case State::kObjectKey: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == '}' && !saw_events_ && top_level_.empty()) {
          ++pos_;
          state_ = State::kDone;
          break;
        }
        if (c != '"') return Unexpected("a key string", c);
        size_t start, end;
        RETURN_IF_ERROR(TakeValue(&start, &end, "the key"));
        std::string key(&buf_[start + 1], end - start - 2);
        ASSIGN_OR_RETURN(c, PeekNonSpace());
        if (c != ':') return Unexpected("':'", c);
        ++pos_;
        ASSIGN_OR_RETURN(c, PeekNonSpace());
        if (c < 0) return Unexpected("a value", c);
        if (key == "traceEvents") {
          if (c != '[') return Unexpected("'[' (traceEvents must be an array)", c);
          ++pos_;
          saw_events_ = true;
          state_ = State::kArrayElement;
          break;
        }
        RETURN_IF_ERROR(TakeValue(&start, &end, fmt::format("the value of \"{}\"", key)));
        if (kept_keys_.count(key) > 0 && end - start <= kMaxTopLevelValue) {
          top_level_[key] = std::string(&buf_[start], end - start);
        }
        state_ = State::kAfterObjectValue;
        break;
      }
      case State::kAfterObjectValue: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ',') {
          ++pos_;
          state_ = State::kObjectKey;
        } else if (c == '}') {
          ++pos_;
          state_ = State::kDone;
        } else {
          return Unexpected("',' or '}'", c);
        }
        break;
      }
      case State::kArrayElement: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ']') {  // empty array, or a trailing comma before ']'
          ++pos_;
          state_ = array_form_ ? State::kDone : State::kAfterObjectValue;
          break;
        }
        if (c < 0) {
          if (array_form_) {
            unclosed_array_ = true;
            state_ = State::kDone;
            break;
          }
          return Unexpected("an event or ']'", c);
        }
        size_t start, end;
        RETURN_IF_ERROR(TakeValue(&start, &end, "the event"));
        state_ = State::kAfterElement;
        *event = std::string_view(&buf_[start], end - start);
        *offset = Offset(start);
        *capacity = buf_.size() - start;
        return true;
      }
      case State::kAfterElement: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ',') {
          ++pos_;
          state_ = State::kArrayElement;
        } else if (c == ']') {
          ++pos_;
          state_ = array_form_ ? State::kDone : State::kAfterObjectValue;
        } else if (c < 0 && array_form_) {
          unclosed_array_ = true;
          state_ = State::kDone;
        } else {
          return Unexpected("',' or ']' after an event", c);
        }
        break;
      }
      case State::kDone: {
        if (!saw_events_) {
          return InvalidArgument("{}: not a trace: the JSON object has no \"traceEvents\" array",
                                 name_);
        }
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c >= 0) return Unexpected("the end of the file", c);
        return false;
      }
    }
  }
}

}  // namespace shardscope::trace
