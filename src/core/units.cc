#include "core/units.h"

#include <fmt/format.h>

#include <cmath>

namespace shardscope {
namespace {

// Scales value into [1, 1000) and returns the SI prefix used.
const char* ScaleSi(double* value) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(*value) >= 1000.0 && i < 6) {
    *value /= 1000.0;
    ++i;
  }
  return kPrefixes[i];
}

std::string WithUnit(double value, const char* unit) {
  const char* prefix = ScaleSi(&value);
  return fmt::format("{:.3g} {}{}", value, prefix, unit);
}

}  // namespace

std::string FormatSi(double value) {
  const char* prefix = ScaleSi(&value);
  return *prefix ? fmt::format("{:.3g} {}", value, prefix) : fmt::format("{:.3g}", value);
}

std::string FormatBytes(double bytes) { return WithUnit(bytes, "B"); }

std::string FormatFlops(double flops) { return WithUnit(flops, "FLOP"); }

std::string FormatSeconds(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (a < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (a < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

}  // namespace shardscope
