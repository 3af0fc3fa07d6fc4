// Numbers, integers, strings and text from JSON, as every trace parser reads
// them (the trace reader's event parser and the Kineto, XLA and NCCL profiler
// importers): one definition, so that the same JSON means the same thing in
// every format.
//
// Integers: a value is an integer when its number is integral and fits an
// int64. "1000", "1000.0", "1.0e3" and "1e3" are all 1000; "1000.5", "1e19",
// strings ("1000"), booleans and null are not integers: the caller skips the
// event or reports the field, nothing is rounded. Stateless and thread-safe.
#ifndef SHARDSCOPE_TRACE_JSON_VALUE_H_
#define SHARDSCOPE_TRACE_JSON_VALUE_H_

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::trace {

// `s` without trailing JSON whitespace (a raw token may carry it).
inline std::string_view TrimJsonSpace(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// A number by the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
inline bool IsJsonNumber(std::string_view t) {
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

// A plain decimal integer token (optional '-', 1 to 18 digits, trailing JSON
// whitespace allowed), read without a number parser: the fast path for what
// trace writers emit. False for anything else, which may still be an integer
// (GetJsonInt).
inline bool ParseDecimalInt(std::string_view token, int64_t* out) {
  token = TrimJsonSpace(token);
  const size_t n = token.size();
  const bool neg = n > 0 && token[0] == '-';
  size_t i = neg ? 1 : 0;
  if (i == n || n - i > 18) return false;
  int64_t v = 0;
  for (; i < n; ++i) {
    unsigned d = static_cast<unsigned char>(token[i]) - '0';
    if (d > 9) return false;
    v = v * 10 + d;
  }
  *out = neg ? -v : v;
  return true;
}

// `d` as an int64 when it is finite, integral and within ±9.2e18.
inline bool IntegralDoubleToInt(double d, int64_t* out) {
  if (!std::isfinite(d) || std::fabs(d) >= 9.2e18 || d != std::floor(d)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

// The integer `v` holds, by the rule above; `Value` is an ondemand::value of
// any simdjson implementation. False, *out untouched, when it is no integer.
template <typename Value>
bool GetJsonInt(Value& v, int64_t* out) {
  if (ParseDecimalInt(v.raw_json_token(), out)) return true;
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) {
    *out = i;
    return true;
  }
  double d;
  return v.get_double().get(d) == simdjson::SUCCESS && IntegralDoubleToInt(d, out);
}

// The integer a number's text holds, by the rule above, for formats that also
// write numbers as strings ("pid": "3", the NCCL profiler's bare values):
// decimal integers (leading zeros allowed, as std::from_chars reads them) and
// integral JSON numbers. No whitespace, no '+'.
inline bool ParseJsonIntText(std::string_view text, int64_t* out) {
  const char* const end = text.data() + text.size();
  int64_t i;
  if (auto [p, ec] = std::from_chars(text.data(), end, i); ec == std::errc() && p == end) {
    *out = i;
    return true;
  }
  double d;
  if (!IsJsonNumber(text)) return false;
  auto [p, ec] = std::from_chars(text.data(), end, d);
  return ec == std::errc() && p == end && IntegralDoubleToInt(d, out);
}

// The string `v` holds: straight from the buffer when it has no escapes (no
// copy), else unescaped by simdjson into its string buffer (valid until the
// parser's next document). `no_escapes`: the caller knows the event has no
// backslash. False when the value is not a string.
template <typename Value>
bool GetJsonString(Value& v, std::string_view* out, bool no_escapes) {
  std::string_view t = v.raw_json_token();
  if (t.size() >= 2 && t[0] == '"') {
    t = TrimJsonSpace(t);
    if (t.size() >= 2 && t.back() == '"') {
      std::string_view inner = t.substr(1, t.size() - 2);
      if (no_escapes || inner.find('\\') == std::string_view::npos) {
        *out = inner;
        return true;
      }
    }
  }
  return v.get_string().get(*out) == simdjson::SUCCESS;
}

// Any value `v` (a simdjson::ondemand::value) as text: a string unescaped, an
// object or array as its JSON, a number or literal as written. False when the
// JSON is invalid.
template <typename Value>
bool GetJsonText(Value& v, std::string* out) {
  simdjson::ondemand::json_type type;
  if (v.type().get(type)) return false;
  std::string_view s;
  switch (type) {
    case simdjson::ondemand::json_type::string:
      if (v.get_string().get(s)) return false;
      break;
    case simdjson::ondemand::json_type::object: {
      simdjson::ondemand::object o;
      if (v.get_object().get(o) || o.raw_json().get(s)) return false;
      break;
    }
    case simdjson::ondemand::json_type::array: {
      simdjson::ondemand::array a;
      if (v.get_array().get(a) || a.raw_json().get(s)) return false;
      break;
    }
    default:
      s = TrimJsonSpace(v.raw_json_token());
  }
  out->assign(s);
  return true;
}

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_JSON_VALUE_H_
