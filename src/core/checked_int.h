// The one checked double → int64 conversion every reader uses: a cast of a value
// outside int64's range is undefined behaviour ("prompt_tokens: 1e30" printed as
// -9223372036854775808), so values are checked before they are converted.
#ifndef SHARDSCOPE_CORE_CHECKED_INT_H_
#define SHARDSCOPE_CORE_CHECKED_INT_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace shardscope {

// `v` as an int64 when it is finite, whole and within int64's range; else nullopt.
inline std::optional<int64_t> WholeToInt64(double v) {
  // 2^63 is exactly representable; every double below it converts without overflow.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (!std::isfinite(v) || v != std::floor(v) || v < -kTwo63 || v >= kTwo63) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

// A JSON number as an int64: integers exactly (an unsigned one above int64's
// range is refused), floats through WholeToInt64; anything else is nullopt.
// nlohmann's own get<int64_t>() casts a float unchecked (1e300 is undefined).
inline std::optional<int64_t> JsonToInt64(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return WholeToInt64(j.get<double>());
  return std::nullopt;
}

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_CHECKED_INT_H_
