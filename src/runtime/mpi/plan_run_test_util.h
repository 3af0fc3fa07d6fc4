// Test helpers for the MPI tests that compare a parallel plan with the one-rank
// run: run an experiment on one rank or on the first ranks of MPI_COMM_WORLD,
// ship each rank's sampled tokens and logit shards to rank 0, and assemble them
// into whole-vocabulary rows. Header-only; used by the *_mpi_test.cc files.
#ifndef SHARDSCOPE_RUNTIME_MPI_PLAN_RUN_TEST_UTIL_H_
#define SHARDSCOPE_RUNTIME_MPI_PLAN_RUN_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/comm/local_communicator.h"
#include "runtime/executor.h"
#include "runtime/mpi/mpi_communicator.h"

namespace shardscope::runtime::testing {

inline ExecutorOptions KeepLogits() {
  ExecutorOptions o;
  o.keep_logits = true;
  return o;
}

// (phase index, request) → sampled token and whole-vocabulary logits.
struct Row {
  int32_t token = -1;
  std::vector<float> logits;
};
using Rows = std::map<std::pair<int32_t, int64_t>, Row>;

inline std::string SerializeSamples(const std::vector<SampleRecord>& samples) {
  std::string out;
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  for (const SampleRecord& s : samples) {
    const int64_t n = static_cast<int64_t>(s.logits.size());
    put(&s.phase_index, 4), put(&s.request, 8), put(&s.token, 4), put(&s.vocab_begin, 8);
    put(&n, 8), put(s.logits.data(), static_cast<size_t>(n) * 4);
  }
  return out;
}

// Adds one rank's serialized vocabulary shards to `rows`; ranks must agree on tokens.
inline void AssembleRows(const std::string& bytes, int64_t vocab, Rows* rows) {
  size_t at = 0;
  auto take = [&](void* p, size_t n) { std::memcpy(p, bytes.data() + at, n), at += n; };
  while (at < bytes.size()) {
    int32_t phase, token;
    int64_t request, begin, n;
    take(&phase, 4), take(&request, 8), take(&token, 4), take(&begin, 8), take(&n, 8);
    Row& row = (*rows)[{phase, request}];
    row.logits.resize(static_cast<size_t>(vocab), std::nanf(""));
    take(row.logits.data() + begin, static_cast<size_t>(n) * 4);
    if (row.token >= 0) {
      EXPECT_EQ(row.token, token) << "ranks disagree on a sampled token";
    }
    row.token = token;
  }
}

// Runs `e` (its plan must be one rank) in this process.
inline StatusOr<Rows> RunOneRank(const Experiment& e) {
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, pl));
  LocalCommunicator comm;
  auto backend = NewCpuBackend();
  ASSIGN_OR_RETURN(auto ex, Executor::Create(e, pl, backend.get(), &comm, KeepLogits()));
  RETURN_IF_ERROR(RunGeneration(builder, *ex));
  Rows rows;
  AssembleRows(SerializeSamples(ex->samples()), e.model.vocab_size, &rows);
  return rows;
}

// Runs `e` on the first e.parallel.world_size() ranks of MPI_COMM_WORLD (the
// others idle) and gathers every rank's samples on rank 0, which gets the
// assembled rows; the other ranks get empty rows. Every rank must call it.
inline StatusOr<Rows> RunOnFirstRanks(const Experiment& e) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int64_t n = e.parallel.world_size();
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me < n ? 0 : MPI_UNDEFINED, me, &sub);
  std::string mine;
  Status run = Status::Ok();
  if (sub != MPI_COMM_NULL) {
    MpiComm owned(sub);
    run = [&]() -> Status {
      ASSIGN_OR_RETURN(auto comm, MpiCommunicator::Create(sub));
      ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
      RETURN_IF_ERROR(comm->AddGroups(pl));
      ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, pl));
      auto backend = NewCpuBackend();
      ASSIGN_OR_RETURN(auto ex, Executor::Create(e, pl, backend.get(), comm.get(), KeepLogits()));
      RETURN_IF_ERROR(RunGeneration(builder, *ex));
      mine = SerializeSamples(ex->samples());
      return Status::Ok();
    }();
  }
  // Every rank reaches the gather, so a failing rank does not hang the others.
  ASSIGN_OR_RETURN(auto world, MpiCommunicator::Create(MPI_COMM_WORLD));
  ASSIGN_OR_RETURN(std::vector<std::string> all, world->GatherToRoot(mine));
  RETURN_IF_ERROR(run);
  Rows rows;
  if (me == 0) {
    for (const std::string& b : all) AssembleRows(b, e.model.vocab_size, &rows);
  }
  return rows;
}

// Checks `got` against `ref` row by row: same tokens, every logit present, and the
// largest relative logit error (max |Δ| ÷ max |ref| per row) at most `tolerance`;
// returns that error.
inline double ExpectRowsMatch(const Rows& ref, const Rows& got, double tolerance) {
  EXPECT_EQ(got.size(), ref.size()) << "phases × requests sampled";
  double worst = 0.0;
  for (const auto& [key, r] : ref) {
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "phase " << key.first << " request " << key.second << " missing";
      continue;
    }
    EXPECT_EQ(it->second.token, r.token) << "phase " << key.first << " request " << key.second;
    double err = 0.0, mag = 1e-30;
    for (size_t v = 0; v < r.logits.size(); ++v) {
      if (std::isnan(it->second.logits[v])) {
        ADD_FAILURE() << "vocabulary entry " << v << " missing";
        return worst;
      }
      err = std::max(err, std::abs(static_cast<double>(it->second.logits[v]) - r.logits[v]));
      mag = std::max(mag, std::abs(static_cast<double>(r.logits[v])));
    }
    worst = std::max(worst, err / mag);
  }
  EXPECT_LE(worst, tolerance);
  return worst;
}

}  // namespace shardscope::runtime::testing

#endif  // SHARDSCOPE_RUNTIME_MPI_PLAN_RUN_TEST_UTIL_H_
