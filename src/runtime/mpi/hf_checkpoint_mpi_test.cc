// Parallel plans from a Hugging Face checkpoint with given prompt tokens, across
// real MPI processes: rank 0 writes a BF16 checkpoint in three shards (the
// seeded weights of seed 11 exported in HF layout), every rank of the plan loads
// its shard from it, and the logits must equal the one-rank run from the same
// checkpoint and prompts (relative error ≤ 1e-4) with identical greedy tokens —
// on every plan of executor_mpi_test.cc. Plans larger than the mpirun world are
// skipped; ranks beyond a plan's world idle through its test.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "plan/test_experiments.h"
#include "runtime/executor.h"
#include "runtime/hf_checkpoint_test_util.h"
#include "runtime/mpi/plan_run_test_util.h"
#include "testing/scratch_dir.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 4, kPrompt = 16, kGenerate = 4;

using testing::Rows;

class HfCheckpointMpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    MPI_Comm_rank(MPI_COMM_WORLD, &me_);
    // One directory for all ranks: rank 0's scratch dir, its path sent to the others.
    std::string path = me_ == 0 ? scratch_.emplace("hf_ckpt_mpi").path() : std::string();
    int size = static_cast<int>(path.size());
    MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(size);
    MPI_Bcast(path.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
    dir_ = path;
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    scratch_.reset();
  }

  void Check(const std::string& model, ParallelSpec p) {
    const int64_t n = p.world_size();
    if (n > world_) GTEST_SKIP() << "needs " << n << " ranks";
    Experiment e =
        shardscope::testing::ZooExperiment(model, "h100-sxm", p, kBatch, kPrompt, kGenerate);
    e.workload.checkpoint = dir_.string();
    // Given prompts (not drawn from the seed), as `prompts:` in a config.
    e.workload.prompts.assign(kBatch, std::vector<int32_t>(kPrompt));
    for (int64_t r = 0; r < kBatch; ++r) {
      for (int64_t t = 0; t < kPrompt; ++t) {
        e.workload.prompts[r][t] = static_cast<int32_t>((97 * r + 31 * t + 3) % e.model.vocab_size);
      }
    }
    int ok = 1;
    if (me_ == 0) {
      Status s = testing::WriteSeededCheckpoint(e, 11, dir_.string(), SafetensorsDtype::kBF16, 3);
      EXPECT_TRUE(s.ok()) << s.message();
      ok = s.ok();
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) return;

    StatusOr<Rows> got = testing::RunOnFirstRanks(e);
    ASSERT_TRUE(got.ok()) << got.status().message();
    if (me_ != 0) return;

    // The one-rank reference from the same checkpoint.
    Experiment one = e;
    one.parallel = ParallelSpec{};
    StatusOr<Rows> ref = testing::RunOneRank(one);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    ASSERT_EQ(ref->size(), static_cast<size_t>(kBatch * kGenerate));
    const double worst = testing::ExpectRowsMatch(*ref, *got, 1e-4);
    RecordProperty("max_relative_error", std::to_string(worst));
  }

  int world_ = 1, me_ = 0;
  std::optional<shardscope::testing::ScratchDir> scratch_;  // rank 0's
  fs::path dir_;
};

ParallelSpec Plan(int64_t tp, int64_t sp = 1, int64_t ep = 1, int64_t dp = 1, int64_t pp = 1) {
  ParallelSpec p;
  p.tp = tp, p.sp = sp, p.ep = ep, p.dp = dp, p.pp = pp;
  return p;
}

ParallelSpec WithMicroBatches(ParallelSpec p, int64_t micro_batches) {
  p.micro_batches = micro_batches;
  return p;
}

ParallelSpec WithSpVariant(ParallelSpec p, SpVariant v) {
  p.sp_variant = v;
  return p;
}

TEST_F(HfCheckpointMpiTest, DenseTp2) { Check("tiny-dense", Plan(2)); }
TEST_F(HfCheckpointMpiTest, DenseTp4) { Check("tiny-dense", Plan(4)); }
TEST_F(HfCheckpointMpiTest, DensePp2) {
  Check("tiny-dense", WithMicroBatches(Plan(1, 1, 1, 1, 2), 2));
}
TEST_F(HfCheckpointMpiTest, DenseLayerWise) {
  ParallelSpec p = WithMicroBatches(Plan(1, 1, 1, 1, 2), 4);
  p.layer_to_stage = {0, 1};
  Check("tiny-dense", p);
}
TEST_F(HfCheckpointMpiTest, DenseSp2Zigzag) { Check("tiny-dense", Plan(1, 2)); }
TEST_F(HfCheckpointMpiTest, DenseSp2Ring) {
  Check("tiny-dense", WithSpVariant(Plan(1, 2), SpVariant::kRing));
}
TEST_F(HfCheckpointMpiTest, DenseSp4Zigzag) { Check("tiny-dense", Plan(1, 4)); }
TEST_F(HfCheckpointMpiTest, DenseSp4Ring) {
  Check("tiny-dense", WithSpVariant(Plan(1, 4), SpVariant::kRing));
}
TEST_F(HfCheckpointMpiTest, DenseSp4Stripe) {
  Check("tiny-dense", WithSpVariant(Plan(1, 4), SpVariant::kStripe));
}
TEST_F(HfCheckpointMpiTest, DenseDp2) { Check("tiny-dense", Plan(1, 1, 1, 2)); }
TEST_F(HfCheckpointMpiTest, DenseTp2Pp2) { Check("tiny-dense", Plan(2, 1, 1, 1, 2)); }
TEST_F(HfCheckpointMpiTest, DenseSp2Tp2) { Check("tiny-dense", Plan(2, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaTp2) { Check("tiny-moe-mla", Plan(2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaEp2) { Check("tiny-moe-mla", Plan(1, 1, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaEp4) { Check("tiny-moe-mla", Plan(1, 1, 4)); }
TEST_F(HfCheckpointMpiTest, MoeMlaEp2Tp2) { Check("tiny-moe-mla", Plan(2, 1, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaSp2) { Check("tiny-moe-mla", Plan(1, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaPp2) { Check("tiny-moe-mla", Plan(1, 1, 1, 1, 2)); }
TEST_F(HfCheckpointMpiTest, MoeMlaDp2) { Check("tiny-moe-mla", Plan(1, 1, 1, 2)); }

}  // namespace
}  // namespace shardscope::runtime
