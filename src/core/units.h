// Human-readable formatting of the quantities ShardScope reports. Internally
// every quantity is in SI base units: seconds, bytes, FLOPs, bytes/s, FLOP/s.
#ifndef SHARDSCOPE_CORE_UNITS_H_
#define SHARDSCOPE_CORE_UNITS_H_

#include <string>

namespace shardscope {

inline constexpr double kKB = 1e3, kMB = 1e6, kGB = 1e9, kTB = 1e12;
inline constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

// "1.23 GB", "512 B" (decimal units, as device data sheets use).
std::string FormatBytes(double bytes);
// "1.23 TFLOP", "4.5 GFLOP".
std::string FormatFlops(double flops);
// "12.3 ms", "4.56 us", "1.2 s".
std::string FormatSeconds(double seconds);
// "1.23 M" style SI prefix with 3 significant digits.
std::string FormatSi(double value);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_UNITS_H_
