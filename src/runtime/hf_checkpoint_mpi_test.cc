// Parallel plans from a Hugging Face checkpoint, across real MPI processes:
// rank 0 writes a BF16 checkpoint in three shards (the seeded weights of seed 11
// exported in HF layout), every rank of the plan loads its shard from it, and
// the logits must equal the one-rank run from the same checkpoint (relative
// error ≤ 1e-4) with identical greedy tokens. Plans larger than the mpirun
// world are skipped; ranks beyond a plan's world idle through its test.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "plan/test_experiments.h"
#include "runtime/executor.h"
#include "runtime/hf_checkpoint_test_util.h"
#include "runtime/local_communicator.h"
#include "runtime/mpi/mpi_communicator.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 4, kPrompt = 16, kGenerate = 4;

// (phase index, request) → token and whole-vocabulary logits.
struct Row {
  int32_t token = -1;
  std::vector<float> logits;
};
using Rows = std::map<std::pair<int32_t, int64_t>, Row>;

std::string Serialize(const std::vector<SampleRecord>& samples) {
  std::string out;
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  for (const SampleRecord& s : samples) {
    const int64_t n = static_cast<int64_t>(s.logits.size());
    put(&s.phase_index, 4), put(&s.request, 8), put(&s.token, 4), put(&s.vocab_begin, 8);
    put(&n, 8), put(s.logits.data(), static_cast<size_t>(n) * 4);
  }
  return out;
}

// Adds one rank's serialized vocabulary shards to `rows`.
void Assemble(const std::string& bytes, int64_t vocab, Rows* rows) {
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

ExecutorOptions KeepLogits() {
  ExecutorOptions o;
  o.keep_logits = true;
  return o;
}

class HfCheckpointMpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    MPI_Comm_rank(MPI_COMM_WORLD, &me_);
    // One directory for all ranks: rank 0's pid.
    int64_t pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    dir_ = fs::path(::testing::TempDir()) / ("hf_ckpt_mpi_" + std::to_string(pid));
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me_ == 0) fs::remove_all(dir_);
  }

  void Check(const std::string& model, ParallelSpec p) {
    const int64_t n = p.world_size();
    if (n > world_) GTEST_SKIP() << "needs " << n << " ranks";
    Experiment e =
        shardscope::testing::ZooExperiment(model, "h100-sxm", p, kBatch, kPrompt, kGenerate);
    e.workload.seed = 5;  // prompts; the weights come from the checkpoint
    e.workload.checkpoint = dir_.string();
    int ok = 1;
    if (me_ == 0) {
      Status s = testing::WriteSeededCheckpoint(e, 11, dir_.string(), SafetensorsDtype::kBF16, 3);
      EXPECT_TRUE(s.ok()) << s.message();
      ok = s.ok();
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) return;

    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, me_ < n ? 0 : MPI_UNDEFINED, me_, &sub);
    std::string mine;
    if (sub != MPI_COMM_NULL) {
      MpiComm owned(sub);
      auto comm = MpiCommunicator::Create(sub);
      ASSERT_TRUE(comm.ok()) << comm.status().message();
      auto pl = Placement::Create(e);
      ASSERT_TRUE(pl.ok()) << pl.status().message();
      ASSERT_TRUE((*comm)->AddGroups(*pl).ok());
      auto builder = ProgramBuilder::Create(e, *pl);
      ASSERT_TRUE(builder.ok()) << builder.status().message();
      auto kernels = NewCpuKernels();
      auto ex = Executor::Create(e, *pl, kernels.get(), comm->get(), KeepLogits());
      ASSERT_TRUE(ex.ok()) << ex.status().message();
      Status s = RunGeneration(*builder, **ex);
      ASSERT_TRUE(s.ok()) << s.message();
      mine = Serialize((*ex)->samples());
    }
    auto world_comm = MpiCommunicator::Create(MPI_COMM_WORLD);
    ASSERT_TRUE(world_comm.ok());
    auto all = (*world_comm)->GatherToRoot(mine);
    ASSERT_TRUE(all.ok());
    if (me_ != 0) return;

    // The one-rank reference from the same checkpoint.
    Experiment one = e;
    one.parallel = ParallelSpec{};
    auto pl = Placement::Create(one);
    ASSERT_TRUE(pl.ok());
    auto builder = ProgramBuilder::Create(one, *pl);
    ASSERT_TRUE(builder.ok());
    LocalCommunicator local;
    auto kernels = NewCpuKernels();
    auto ex = Executor::Create(one, *pl, kernels.get(), &local, KeepLogits());
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    ASSERT_TRUE(RunGeneration(*builder, **ex).ok());
    Rows ref, got;
    Assemble(Serialize((*ex)->samples()), e.model.vocab_size, &ref);
    for (const std::string& b : *all) Assemble(b, e.model.vocab_size, &got);
    ASSERT_EQ(ref.size(), static_cast<size_t>(kBatch * kGenerate));
    ASSERT_EQ(got.size(), ref.size());
    double worst = 0.0;
    for (const auto& [key, r] : ref) {
      const Row& g = got[key];
      EXPECT_EQ(g.token, r.token) << "phase " << key.first << " request " << key.second;
      double err = 0.0, mag = 1e-30;
      for (size_t v = 0; v < r.logits.size(); ++v) {
        ASSERT_FALSE(std::isnan(g.logits[v])) << "vocabulary entry " << v << " missing";
        err = std::max(err, std::abs(static_cast<double>(g.logits[v]) - r.logits[v]));
        mag = std::max(mag, std::abs(static_cast<double>(r.logits[v])));
      }
      worst = std::max(worst, err / mag);
    }
    EXPECT_LE(worst, 1e-4);
    RecordProperty("max_relative_error", std::to_string(worst));
  }

  int world_ = 1, me_ = 0;
  fs::path dir_;
};

ParallelSpec Plan(int64_t tp, int64_t ep = 1, int64_t pp = 1) {
  ParallelSpec p;
  p.tp = tp, p.ep = ep, p.pp = pp;
  return p;
}

TEST_F(HfCheckpointMpiTest, DenseTp2) { Check("tiny-dense", Plan(2)); }
TEST_F(HfCheckpointMpiTest, DensePp2) {
  ParallelSpec p = Plan(1, 1, 2);
  p.micro_batches = 2;
  Check("tiny-dense", p);
}
TEST_F(HfCheckpointMpiTest, MoeMlaTp2) { Check("tiny-moe-mla", Plan(2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaEp2) { Check("tiny-moe-mla", Plan(1, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaEp2Tp2) { Check("tiny-moe-mla", Plan(2, 2)); }

}  // namespace
}  // namespace shardscope::runtime
