// Distributing a search over MPI ranks: under `mpirun -np N shardscope search`,
// candidate i of each step is evaluated on rank i mod N and every rank gathers
// every result, so all ranks hold the same SearchResult and rank 0 alone prints it.
// Built without MPI (SHARDSCOPE_WITH_MPI=OFF) a search runs in one process, and
// one started under mpirun says it cannot be distributed.
#ifndef SHARDSCOPE_SEARCH_DISTRIBUTED_H_
#define SHARDSCOPE_SEARCH_DISTRIBUTED_H_

#include <memory>

#include "search/search.h"

namespace shardscope::search {

// MPI for the life of a search command (MPI_Init when started under mpirun,
// MPI_Finalize on destruction). Not copyable.
class SearchRanks {
 public:
  // A single process when not under mpirun; an error when under mpirun in a
  // build without MPI, or when MPI cannot start.
  static StatusOr<std::unique_ptr<SearchRanks>> Start(int* argc, char*** argv);
  SearchRanks(const SearchRanks&) = delete;
  SearchRanks& operator=(const SearchRanks&) = delete;
  ~SearchRanks();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Runs this rank's share of each step (input i on rank i mod size) and
  // gathers every result on every rank; with one rank, MapHere. A failure on
  // any rank fails all.
  Mapper mapper() const;

 private:
  SearchRanks(int rank, int size, bool owns) : rank_(rank), size_(size), owns_mpi_(owns) {}
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_DISTRIBUTED_H_
