// PlainJsonCursor: a strict reader of the JSON the trace writer emits, for the
// event parser's fast path. It walks the bytes of one event object by hand —
// strings of printable ASCII without escapes, integer and number tokens, keys
// matched against expected literals, nested values skipped by the JSON grammar
// — and says "not sure" (false) at anything else, so the caller parses that
// event with simdjson instead. Whatever it accepts is valid JSON read the way
// the simdjson path reads it (raw number tokens, strings as they stand), which
// keeps both paths' results equal. Needs 16 readable bytes past the end (the
// reader's events have simdjson's 64 bytes of padding). Not thread-safe.
#ifndef SHARDSCOPE_TRACE_PLAIN_JSON_H_
#define SHARDSCOPE_TRACE_PLAIN_JSON_H_

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/json_value.h"

namespace shardscope::trace {

// The cursor lives in registers only when every call on it is inlined.
#define SHARDSCOPE_PLAIN_JSON_INLINE inline __attribute__((always_inline))

// A key with its quotes and colon ("\"pid\":"), at most 16 bytes, to compare at once.
struct KeyPattern {
  alignas(16) char bytes[16] = {};
  uint32_t size = 0;  // 0: none
};

class PlainJsonCursor {
 public:
  // Reads [begin, end); begin[end - begin + 15] must be readable.
  PlainJsonCursor(const char* begin, const char* end)
      : p_(begin), end_(end), simple_(SimpleBytes(begin, end)) {}

  SHARDSCOPE_PLAIN_JSON_INLINE bool at_end() const { return p_ == end_; }

  // Skips JSON whitespace.
  SHARDSCOPE_PLAIN_JSON_INLINE void SkipSpace() {
    while (p_ < end_ && IsSpace(*p_)) ++p_;
  }
  // Consumes `c` after optional whitespace; false (nothing consumed but the
  // whitespace) when the next byte is another.
  SHARDSCOPE_PLAIN_JSON_INLINE bool Eat(char c) {
    if (p_ < end_ && *p_ == c) {  // the writer's JSON has no whitespace
      ++p_;
      return true;
    }
    SkipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  // The next byte after whitespace, or 0 at the end.
  SHARDSCOPE_PLAIN_JSON_INLINE char Peek() {
    SkipSpace();
    return p_ < end_ ? *p_ : '\0';
  }
  // A string of printable ASCII without backslashes; *out is its inside.
  SHARDSCOPE_PLAIN_JSON_INLINE bool String(std::string_view* out) {
    SkipSpace();
    if (p_ == end_ || *p_ != '"') return false;
    const char* s = ++p_;
    if (simple_) {
      // Every byte is printable ASCII and none is a backslash: the next quote
      // ends the string.
      const char* q = FindQuote(p_);
      if (q >= end_) return false;
      *out = std::string_view(s, static_cast<size_t>(q - s));
      p_ = q + 1;
      return true;
    }
    while (p_ < end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(s, static_cast<size_t>(p_ - s));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
      ++p_;
    }
    return false;
  }
  // Consumes the key `k` (quotes and colon) when it is next, exactly.
  SHARDSCOPE_PLAIN_JSON_INLINE bool MatchKey(const KeyPattern& k) {
    if (k.size == 0 || end_ - p_ < static_cast<std::ptrdiff_t>(k.size)) return false;
#if defined(__SSE2__)
    const __m128i got = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
    const __m128i want = _mm_load_si128(reinterpret_cast<const __m128i*>(k.bytes));
    const uint32_t eq = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(got, want)));
    const uint32_t need = (1u << k.size) - 1;
    if ((eq & need) != need) return false;
#else
    if (std::memcmp(p_, k.bytes, k.size) != 0) return false;
#endif
    p_ += k.size;
    return true;
  }
  // A scalar token: the bytes up to the next whitespace or JSON punctuation
  // (what simdjson's raw_json_token holds, trimmed), non-empty.
  SHARDSCOPE_PLAIN_JSON_INLINE bool Token(std::string_view* out) {
    SkipSpace();
    const char* s = p_;
    while (p_ < end_ && !IsDelimiter(*p_)) ++p_;
    *out = std::string_view(s, static_cast<size_t>(p_ - s));
    return p_ != s;
  }
  // A token that is a plain decimal integer (optional '-', 1 to 18 digits):
  // what ParseDecimalInt (json_value.h) accepts of Token.
  SHARDSCOPE_PLAIN_JSON_INLINE bool DecimalInt(int64_t* out) {
    SkipSpace();
    const bool neg = p_ < end_ && *p_ == '-';
    const char* q = p_ + (neg ? 1 : 0);
    const int n = DigitRun(q);
    if (n == 0 || n >= 16 || q + n > end_) return DecimalIntSlow(out);
    if (q + n < end_ && !IsDelimiter(q[n])) return false;  // "12a": not an integer token
    const uint64_t v = ParseDigits(q, n);
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    p_ = q + n;
    return true;
  }
  // A number of microseconds as nanoseconds, as ParseMicrosToNs (trace_reader.h)
  // reads the Token; `general` is that function, called for what this does not
  // read itself (anything but up to 15 digits, a '.' and up to 3 digits).
  template <typename General>
  SHARDSCOPE_PLAIN_JSON_INLINE bool Micros(int64_t* ns, General general) {
    SkipSpace();
    const char* q = p_;
    const int whole_n = DigitRun(q);
    if (whole_n > 0 && whole_n <= 15 && q + whole_n < end_ && q[whole_n] == '.') {
      const char* f = q + whole_n + 1;
      const int frac_n = DigitRun(f);
      if (frac_n >= 1 && frac_n <= 3 && f + frac_n <= end_ &&
          (f + frac_n == end_ || IsDelimiter(f[frac_n]))) {
        static constexpr uint64_t kScale[4] = {0, 100, 10, 1};
        *ns = static_cast<int64_t>(ParseDigits(q, whole_n) * 1000 +
                                   ParseDigits(f, frac_n) * kScale[frac_n]);
        p_ = f + frac_n;
        return true;
      }
    }
    std::string_view t;
    return Token(&t) && general(t, ns);
  }

  // The number of ASCII digits at the start of the 16 bytes at p (16: all).
  static SHARDSCOPE_PLAIN_JSON_INLINE int DigitRun(const char* p) {
#if defined(__SSE2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    const __m128i nine = _mm_set1_epi8(9);
    const uint32_t digits =
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(d, nine), nine)));
    return __builtin_ctz(~digits);  // bit 16 and up of ~digits are set
#else
    int n = 0;
    while (n < 16 && p[n] >= '0' && p[n] <= '9') ++n;
    return n;
#endif
  }
  // The value of the n ASCII digits at p, 1 <= n <= 15; reads the 16 bytes at p.
  static SHARDSCOPE_PLAIN_JSON_INLINE uint64_t ParseDigits(const char* p, int n) {
    if (n <= 8) return EightDigits(Load8(p) << (8 * (8 - n)));
    return EightDigits(Load8(p) << (8 * (16 - n))) * 100000000ULL + EightDigits(Load8(p + n - 8));
  }

  // Skips one value of any type, checking it against the JSON grammar; nested
  // deeper than a few levels counts as "not sure".
  SHARDSCOPE_PLAIN_JSON_INLINE bool SkipValue() {
    // Out of line with the position passed by value, so the cursor's own
    // address never escapes and it stays in registers.
    const char* p = SkipValueAt(p_, end_, simple_, 0);
    if (p == nullptr) return false;
    p_ = p;
    return true;
  }

  static SHARDSCOPE_PLAIN_JSON_INLINE bool IsSpace(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
  }
  // Whitespace or JSON punctuation: what ends a scalar token.
  static SHARDSCOPE_PLAIN_JSON_INLINE bool IsDelimiter(char c) {
    static constexpr auto kTable = [] {
      struct Table {
        bool is[256] = {};
      } t;
      for (unsigned char d : std::string_view(" \n\r\t,:[]{}\"")) t.is[d] = true;
      return t;
    }();
    return kTable.is[static_cast<unsigned char>(c)];
  }
  // True when every byte of [begin, end) is printable ASCII (0x20..0x7f) and
  // none is a backslash; reads up to 15 bytes past end.
  static bool SimpleBytes(const char* begin, const char* end) {
#if defined(__SSE2__)
    const __m128i below = _mm_set1_epi8(0x20);
    const __m128i backslash = _mm_set1_epi8('\\');
    auto bad = [&](const char* p) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Signed: bytes >= 0x80 are negative, so one compare finds both kinds.
      return static_cast<uint32_t>(
          _mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(v, below), _mm_cmpeq_epi8(v, backslash))));
    };
    const char* p = begin;
    for (; end - p >= 16; p += 16) {
      if (bad(p) != 0) return false;
    }
    return p == end || (bad(p) & ((1u << (end - p)) - 1)) == 0;
#else
    for (const char* p = begin; p < end; ++p) {
      const unsigned char c = static_cast<unsigned char>(*p);
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
    }
    return true;
#endif
  }

 private:
  // The first '"' at or after p (it may lie past the end; the padding ends it).
  SHARDSCOPE_PLAIN_JSON_INLINE const char* FindQuote(const char* p) const {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    while (p < end_) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
      if (m != 0) return p + __builtin_ctz(m);
      p += 16;
    }
    return end_;
#else
    while (p < end_ && *p != '"') ++p;
    return p;
#endif
  }

  // DecimalInt for what DigitRun cannot see at once (16 or more digits, the event's end).
  bool DecimalIntSlow(int64_t* out) {
    const char* s = p_;
    const bool neg = p_ < end_ && *p_ == '-';
    if (neg) ++p_;
    const char* digits = p_;
    uint64_t v = 0;
    while (p_ < end_) {
      const unsigned d = static_cast<unsigned char>(*p_) - '0';
      if (d > 9) break;
      v = v * 10 + d;  // wraps harmlessly past 19 digits, which fail below
      ++p_;
    }
    const std::ptrdiff_t n = p_ - digits;
    if (n == 0 || n > 18 || (p_ < end_ && !IsDelimiter(*p_))) {
      p_ = s;
      return false;
    }
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  // 8 bytes at p, first byte lowest (the order on little-endian machines).
  static SHARDSCOPE_PLAIN_JSON_INLINE uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  // The number written by 8 digit bytes (lowest byte the most significant digit;
  // zero bytes count as 0 digits), by three multiply-and-shift steps.
  static SHARDSCOPE_PLAIN_JSON_INLINE uint64_t EightDigits(uint64_t v) {
    v = ((v & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;
    v = ((v & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
    return ((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
  }

  // Constructs a cursor at p; used only by SkipValueAt.
  PlainJsonCursor(const char* p, const char* end, bool simple)
      : p_(p), end_(end), simple_(simple) {}

  // The end of the value at p, or nullptr when it is not one (see SkipValue).
  [[gnu::noinline]] static const char* SkipValueAt(const char* p, const char* end, bool simple,
                                                   int depth) {
    if (depth > 16) return nullptr;
    PlainJsonCursor c(p, end, simple);
    auto nested = [&]() {
      const char* q = SkipValueAt(c.p_, end, simple, depth + 1);
      if (q == nullptr) return false;
      c.p_ = q;
      return true;
    };
    bool ok = false;
    switch (c.Peek()) {
      case '"': {
        std::string_view s;
        ok = c.String(&s);
        break;
      }
      case '{':
        ++c.p_;
        ok = c.Eat('}');
        if (!ok) {
          do {
            std::string_view key;
            if (!c.String(&key) || !c.Eat(':') || !nested()) return nullptr;
          } while (c.Eat(','));
          ok = c.Eat('}');
        }
        break;
      case '[':
        ++c.p_;
        ok = c.Eat(']');
        if (!ok) {
          do {
            if (!nested()) return nullptr;
          } while (c.Eat(','));
          ok = c.Eat(']');
        }
        break;
      default: {
        std::string_view t;
        ok = c.Token(&t) && (t == "true" || t == "false" || t == "null" || IsJsonNumber(t));
        break;
      }
    }
    return ok ? c.p_ : nullptr;
  }

  const char* p_;
  const char* const end_;
  const bool simple_;  // SimpleBytes: strings need no checks
};

}  // namespace shardscope::trace

#undef SHARDSCOPE_PLAIN_JSON_INLINE

#endif  // SHARDSCOPE_TRACE_PLAIN_JSON_H_
