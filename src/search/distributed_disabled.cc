// Built without MPI: one process only.
#include <cstdlib>

#include "search/distributed.h"

namespace shardscope::search {

StatusOr<std::unique_ptr<SearchRanks>> SearchRanks::Start(int*, char***) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_RANK") != nullptr ||
      std::getenv("PMIX_RANK") != nullptr) {
    return Unimplemented(
        "search was started under mpirun, but this build has no MPI "
        "(SHARDSCOPE_WITH_MPI=OFF): run it as one process");
  }
  return std::unique_ptr<SearchRanks>(new SearchRanks(0, 1, false));
}

SearchRanks::~SearchRanks() = default;

Mapper SearchRanks::mapper() const { return MapHere; }

}  // namespace shardscope::search
