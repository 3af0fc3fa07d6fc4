#include "trace/trace_event.h"

#include "core/enum_names.h"

namespace shardscope::trace {
namespace {

constexpr auto kCategoryNames = MakeEnumNames<Category>(
    {{Category::kCompute, "compute"}, {Category::kComm, "comm"}, {Category::kOther, "other"}});

}  // namespace

std::string_view CategoryName(Category c) { return kCategoryNames.Name(c); }
std::optional<Category> ParseCategory(std::string_view s) { return kCategoryNames.Parse(s); }

}  // namespace shardscope::trace
