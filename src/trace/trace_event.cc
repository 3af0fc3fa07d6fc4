#include "trace/trace_event.h"

#include <array>

namespace shardscope::trace {
namespace {

constexpr std::array<std::string_view, kNumCategories> kCategoryNames = {"compute", "comm",
                                                                         "other"};
constexpr std::array<std::string_view, kNumPhases> kPhaseNames = {"", "prefill", "decode"};
constexpr std::array<std::string_view, kNumGroupDims> kDimNames = {"",   "tp", "pp",
                                                                   "sp", "dp", "ep"};

}  // namespace

std::string_view CategoryName(Category c) { return kCategoryNames[static_cast<int>(c)]; }
std::string_view PhaseName(Phase p) { return kPhaseNames[static_cast<int>(p)]; }
std::string_view GroupDimName(GroupDim d) { return kDimNames[static_cast<int>(d)]; }

std::optional<Category> ParseCategory(std::string_view s) {
  for (int i = 0; i < kNumCategories; ++i) {
    if (kCategoryNames[i] == s) return static_cast<Category>(i);
  }
  return std::nullopt;
}

std::optional<Phase> ParsePhase(std::string_view s) {
  for (int i = 1; i < kNumPhases; ++i) {
    if (kPhaseNames[i] == s) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

std::optional<GroupDim> ParseGroupDim(std::string_view s) {
  for (int i = 1; i < kNumGroupDims; ++i) {
    if (kDimNames[i] == s) return static_cast<GroupDim>(i);
  }
  return std::nullopt;
}

}  // namespace shardscope::trace
