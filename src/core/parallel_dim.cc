#include "core/parallel_dim.h"

#include "core/enum_names.h"

namespace shardscope {
namespace {

constexpr auto kDimNames = MakeEnumNames<Dim>(
    {{Dim::kTp, "tp"}, {Dim::kSp, "sp"}, {Dim::kEp, "ep"}, {Dim::kDp, "dp"}, {Dim::kPp, "pp"}});

}  // namespace

std::string_view DimName(Dim d) { return kDimNames.Name(d, ""); }

StatusOr<Dim> ParseDim(std::string_view name) {
  return kDimNames.ParseOrError(name, "parallelism dimension");
}

}  // namespace shardscope
