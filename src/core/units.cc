#include "core/units.h"

#include <fmt/format.h>

#include <cmath>

namespace shardscope {
namespace {

// The magnitude at which 3 significant digits round up to 1000.
constexpr double kRollsOver = 999.5;

// Scales value into [1, 1000) after rounding to 3 significant digits and
// returns the SI prefix used.
const char* ScaleSi(double* value) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(*value) >= kRollsOver && i < 6) {
    *value /= 1000.0;
    ++i;
  }
  return kPrefixes[i];
}

// 3 significant digits of a value below 1000 in magnitude (no exponent).
std::string ThreeDigits(double v) { return FormatNumber(v, 3); }

std::string WithUnit(double value, const char* unit) {
  const char* prefix = ScaleSi(&value);
  return fmt::format("{} {}{}", ThreeDigits(value), prefix, unit);
}

}  // namespace

std::string FormatNumber(double v, int digits) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e15 || a < 1e-4) return fmt::format("{:.{}g}", v, digits);
  // Digits before the point once rounded: at least `digits` of them prints as an integer.
  if (a >= std::pow(10.0, digits) - 0.5) return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}g}", v, digits);
}

std::string FormatCount(int64_t count, std::string_view noun, std::string_view plural) {
  if (count == 1) return fmt::format("1 {}", noun);
  if (plural.empty()) return fmt::format("{} {}s", count, noun);
  return fmt::format("{} {}", count, plural);
}

std::string FormatSi(double value) {
  const char* prefix = ScaleSi(&value);
  return *prefix ? fmt::format("{} {}", ThreeDigits(value), prefix) : ThreeDigits(value);
}

std::string FormatBytes(double bytes) { return WithUnit(bytes, "B"); }

std::string FormatFlops(double flops) { return WithUnit(flops, "FLOP"); }

std::string FormatSeconds(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (!std::isfinite(s)) return fmt::format("{} s", s);
  if (a < kRollsOver * 1e-9) return fmt::format("{} ns", ThreeDigits(s * 1e9));
  if (a < kRollsOver * 1e-6) return fmt::format("{} µs", ThreeDigits(s * 1e6));
  if (a < kRollsOver * 1e-3) return fmt::format("{} ms", ThreeDigits(s * 1e3));
  return fmt::format("{} s", ThreeDigits(s));
}

}  // namespace shardscope
