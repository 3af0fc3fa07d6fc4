// The one checked double → int64 conversion every reader uses: a cast of a value
// outside int64's range is undefined behaviour ("prompt_tokens: 1e30" printed as
// -9223372036854775808), so values are checked before they are converted.
#ifndef SHARDSCOPE_CORE_CHECKED_INT_H_
#define SHARDSCOPE_CORE_CHECKED_INT_H_

#include <cmath>
#include <cstdint>
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

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_CHECKED_INT_H_
