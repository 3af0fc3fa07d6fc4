// Human-readable formatting of the quantities ShardScope reports. Internally
// every quantity is in SI base units: seconds, bytes, FLOPs, bytes/s, FLOP/s.
// The text reads as people write numbers: 3 significant digits, a prefix that
// keeps the number below 1000 after rounding ("1 s", never "1e+03 ms"), and no
// exponent notation for ordinary magnitudes. Pure functions.
#ifndef SHARDSCOPE_CORE_UNITS_H_
#define SHARDSCOPE_CORE_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope {

inline constexpr double kKB = 1e3, kMB = 1e6, kGB = 1e9, kTB = 1e12;
inline constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

// "1.23 GB", "512 B" (decimal units, as device data sheets use).
std::string FormatBytes(double bytes);
// "1.23 TFLOP", "4.5 GFLOP".
std::string FormatFlops(double flops);
// "12.3 ms", "4.56 us", "1.2 s", "3600 s".
std::string FormatSeconds(double seconds);
// "1.23 M" style SI prefix with 3 significant digits.
std::string FormatSi(double value);
// `digits` significant digits without exponent notation between 1e-4 and 1e15:
// "0.731", "12345" (digits 4), "0.00012"; integers as integers.
std::string FormatNumber(double value, int digits = 4);
// "1 node", "2 nodes": a count and its noun, plural unless the count is 1.
std::string FormatCount(int64_t count, std::string_view noun, std::string_view plural = "");

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_UNITS_H_
