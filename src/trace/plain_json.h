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

  static bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool IsDelimiter(char c) {
    switch (c) {
      case ' ':
      case '\n':
      case '\r':
      case '\t':
      case ',':
      case ':':
      case '[':
      case ']':
      case '{':
      case '}':
      case '"':
        return true;
      default:
        return false;
    }
  }
  // A number by the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  static bool IsJsonNumber(std::string_view t) {
    size_t i = 0, n = t.size();
    auto digits = [&] {
      size_t s = i;
      while (i < n && t[i] >= '0' && t[i] <= '9') ++i;
      return i > s;
    };
    if (i < n && t[i] == '-') ++i;
    if (i < n && t[i] == '0') {
      ++i;
    } else if (!digits()) {
      return false;
    }
    if (i < n && t[i] == '.') {
      ++i;
      if (!digits()) return false;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < n && (t[i] == '+' || t[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return i == n;
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
