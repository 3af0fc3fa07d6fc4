// MPI build: candidates split round-robin over the ranks; results exchanged
// as JSON (doubles round-trip exactly) with one MPI_Allgatherv.
#include <mpi.h>

#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "search/distributed.h"

namespace shardscope::search {
namespace {

bool UnderMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_RANK") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

// Every rank's bytes, concatenated in rank order, on every rank.
StatusOr<std::vector<std::string>> AllGather(const std::string& mine, int size) {
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return InternalError("search: {} bytes of results exceed one MPI message", mine.size());
  }
  int my_len = static_cast<int>(mine.size());
  std::vector<int> lens(size), displs(size);
  if (MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return InternalError("search: MPI_Allgather of result sizes failed");
  }
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    if (total > std::numeric_limits<int>::max()) {
      return InternalError("search: results exceed one MPI message");
    }
    displs[r] = static_cast<int>(total);
    total += lens[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  if (MPI_Allgatherv(mine.data(), my_len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                     MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return InternalError("search: MPI_Allgatherv of results failed");
  }
  std::vector<std::string> out(size);
  for (int r = 0; r < size; ++r) out[r] = all.substr(displs[r], lens[r]);
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<SearchRanks>> SearchRanks::Start(int* argc, char*** argv) {
  if (!UnderMpirun()) return std::unique_ptr<SearchRanks>(new SearchRanks(0, 1, false));
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      return InternalError("search: MPI_Init failed");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<SearchRanks>(new SearchRanks(rank, size, !initialized));
}

SearchRanks::~SearchRanks() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

Mapper SearchRanks::mapper() const {
  if (size_ == 1) return MapHere;
  const int rank = rank_, size = size_;
  return [rank, size](const std::vector<Evaluation>& inputs,
                      const Step& step) -> StatusOr<std::vector<Evaluation>> {
    // Mine, or the first error: either way every rank takes part in the gather.
    nlohmann::json mine = nlohmann::json::array();
    std::string error;
    for (size_t i = rank; i < inputs.size(); i += size) {
      auto e = step(inputs[i]);
      if (!e.ok()) {
        error = e.status().message();
        break;
      }
      mine.push_back({i, EvaluationToJson(*e)});
    }
    nlohmann::json msg =
        error.empty() ? nlohmann::json{{"results", mine}} : nlohmann::json{{"error", error}};
    ASSIGN_OR_RETURN(std::vector<std::string> parts, AllGather(msg.dump(), size));
    std::vector<Evaluation> out(inputs.size());
    size_t received = 0;
    for (int r = 0; r < size; ++r) {
      nlohmann::json j = nlohmann::json::parse(parts[r], nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object())
        return DataLoss("search: bad results from rank {}", r);
      if (j.contains("error")) {
        return InternalError("search: rank {}: {}", r, j["error"].get<std::string>());
      }
      for (const auto& item : j["results"]) {
        if (!item.is_array() || item.size() != 2 || !item[0].is_number_unsigned()) {
          return DataLoss("search: bad result from rank {}", r);
        }
        const size_t i = item[0].get<size_t>();
        if (i >= inputs.size() || i % size != static_cast<size_t>(r)) {
          return DataLoss("search: rank {} returned input {} it was not given", r, i);
        }
        ASSIGN_OR_RETURN(out[i], EvaluationFromJson(item[1]));
        out[i].candidate = inputs[i].candidate;
        ++received;
      }
    }
    if (received != inputs.size()) {
      return DataLoss("search: {} results gathered for {} inputs", received, inputs.size());
    }
    return out;
  };
}

}  // namespace shardscope::search
