// The executor across real MPI processes: every strategy of the tiny zoo models
// must give the single-rank logits (relative error ≤ 1e-4) and the same greedy
// tokens for 8 decode steps. Plans larger than the mpirun world are skipped;
// ranks beyond a plan's world idle through its test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <map>
#include <string>

#include "plan/test_experiments.h"
#include "runtime/mpi/plan_run_test_util.h"

namespace shardscope::runtime {
namespace {

constexpr int64_t kBatch = 4, kPrompt = 32, kGenerate = 9;

Experiment MakeExperiment(const std::string& model, const ParallelSpec& p) {
  Experiment e =
      shardscope::testing::ZooExperiment(model, "h100-sxm", p, kBatch, kPrompt, kGenerate);
  e.workload.seed = 7;
  return e;
}

using testing::Rows;

Rows SingleRank(const std::string& model) {
  static std::map<std::string, Rows> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  StatusOr<Rows> rows = testing::RunOneRank(MakeExperiment(model, ParallelSpec{}));
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok()) return {};
  cache[model] = *rows;
  return *rows;
}

class ExecutorMpiTest : public ::testing::Test {
 protected:
  // Runs `p` on the first world_size ranks and checks rank 0's assembled output.
  void Check(const std::string& model, ParallelSpec p) {
    int world = 1, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const int64_t n = p.world_size();
    if (n > world) GTEST_SKIP() << "needs " << n << " ranks";
    const Rows ref = SingleRank(model);
    StatusOr<Rows> got = testing::RunOnFirstRanks(MakeExperiment(model, p));
    ASSERT_TRUE(got.ok()) << got.status().message();
    if (me != 0) return;
    const double worst = testing::ExpectRowsMatch(ref, *got, 1e-4);
    RecordProperty("max_relative_error", std::to_string(worst));
  }
};

ParallelSpec Plan(int64_t tp, int64_t sp = 1, int64_t ep = 1, int64_t dp = 1, int64_t pp = 1) {
  ParallelSpec p;
  p.tp = tp, p.sp = sp, p.ep = ep, p.dp = dp, p.pp = pp;
  return p;
}

TEST_F(ExecutorMpiTest, DenseTp2) { Check("tiny-dense", Plan(2)); }
TEST_F(ExecutorMpiTest, DenseTp4ReplicatesKvHeads) { Check("tiny-dense", Plan(4)); }
TEST_F(ExecutorMpiTest, DensePp2WithMicroBatches) {
  ParallelSpec p = Plan(1, 1, 1, 1, 2);
  p.micro_batches = 2;
  Check("tiny-dense", p);
}
TEST_F(ExecutorMpiTest, DenseLayerWise) {
  ParallelSpec p = Plan(1, 1, 1, 1, 2);
  p.layer_to_stage = {0, 1};
  p.micro_batches = 4;
  Check("tiny-dense", p);
}
TEST_F(ExecutorMpiTest, DenseSp2Zigzag) { Check("tiny-dense", Plan(1, 2)); }
TEST_F(ExecutorMpiTest, DenseSp2Ring) {
  ParallelSpec p = Plan(1, 2);
  p.sp_variant = SpVariant::kRing;
  Check("tiny-dense", p);
}
TEST_F(ExecutorMpiTest, DenseSp4Zigzag) { Check("tiny-dense", Plan(1, 4)); }
TEST_F(ExecutorMpiTest, DenseSp4Ring) {
  ParallelSpec p = Plan(1, 4);
  p.sp_variant = SpVariant::kRing;
  Check("tiny-dense", p);
}
TEST_F(ExecutorMpiTest, DenseSp4Stripe) {
  ParallelSpec p = Plan(1, 4);
  p.sp_variant = SpVariant::kStripe;
  Check("tiny-dense", p);
}
TEST_F(ExecutorMpiTest, DenseDp2) { Check("tiny-dense", Plan(1, 1, 1, 2)); }
TEST_F(ExecutorMpiTest, DenseTp2Pp2) { Check("tiny-dense", Plan(2, 1, 1, 1, 2)); }
TEST_F(ExecutorMpiTest, DenseSp2Tp2) { Check("tiny-dense", Plan(2, 2)); }

TEST_F(ExecutorMpiTest, MoeMlaTp2) { Check("tiny-moe-mla", Plan(2)); }
TEST_F(ExecutorMpiTest, MoeMlaEp2) { Check("tiny-moe-mla", Plan(1, 1, 2)); }
TEST_F(ExecutorMpiTest, MoeMlaEp4) { Check("tiny-moe-mla", Plan(1, 1, 4)); }
TEST_F(ExecutorMpiTest, MoeMlaEp2Tp2) { Check("tiny-moe-mla", Plan(2, 1, 2)); }
TEST_F(ExecutorMpiTest, MoeMlaSp2) { Check("tiny-moe-mla", Plan(1, 2)); }
TEST_F(ExecutorMpiTest, MoeMlaPp2) { Check("tiny-moe-mla", Plan(1, 1, 1, 1, 2)); }
TEST_F(ExecutorMpiTest, MoeMlaDp2) { Check("tiny-moe-mla", Plan(1, 1, 1, 2)); }

}  // namespace
}  // namespace shardscope::runtime
