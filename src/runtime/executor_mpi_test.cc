// The executor across real MPI processes: every strategy of the tiny zoo models
// must give the single-rank logits (relative error ≤ 1e-4) and the same greedy
// tokens for 8 decode steps. Plans larger than the mpirun world are skipped;
// ranks beyond a plan's world idle through its test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <map>

#include "plan/test_experiments.h"
#include "runtime/executor.h"
#include "runtime/local_communicator.h"
#include "runtime/mpi/mpi_communicator.h"

namespace shardscope::runtime {
namespace {

constexpr int64_t kBatch = 4, kPrompt = 32, kGenerate = 9;

Experiment MakeExperiment(const std::string& model, const ParallelSpec& p) {
  Experiment e = testing::ZooExperiment(model, "h100-sxm", p, kBatch, kPrompt, kGenerate);
  e.workload.seed = 7;
  return e;
}

ExecutorOptions KeepLogits() {
  ExecutorOptions o;
  o.keep_logits = true;
  return o;
}

using Key = std::pair<int32_t, int64_t>;  // (phase index, request)
struct Row {
  int32_t token = -1;
  std::vector<float> logits;  // whole vocabulary
};

void Append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}

std::string Serialize(const std::vector<SampleRecord>& samples) {
  std::string out;
  for (const SampleRecord& s : samples) {
    const int64_t n = static_cast<int64_t>(s.logits.size());
    Append(&out, &s.phase_index, 4), Append(&out, &s.request, 8), Append(&out, &s.token, 4);
    Append(&out, &s.vocab_begin, 8), Append(&out, &n, 8);
    Append(&out, s.logits.data(), static_cast<size_t>(n) * 4);
  }
  return out;
}

// Assembles the vocabulary shards of every rank's samples into whole rows.
void Merge(const std::string& bytes, int64_t vocab, std::map<Key, Row>* rows) {
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

std::map<Key, Row> SingleRank(const std::string& model) {
  static std::map<std::string, std::map<Key, Row>> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  Experiment e = MakeExperiment(model, ParallelSpec{});
  auto pl = Placement::Create(e);
  EXPECT_TRUE(pl.ok()) << pl.status().message();
  auto builder = ProgramBuilder::Create(e, *pl);
  EXPECT_TRUE(builder.ok()) << builder.status().message();
  LocalCommunicator comm;
  auto kernels = NewCpuKernels();
  auto ex = Executor::Create(e, *pl, kernels.get(), &comm, KeepLogits());
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  Status s = RunGeneration(*builder, **ex);
  EXPECT_TRUE(s.ok()) << s.message();
  std::map<Key, Row> rows;
  Merge(Serialize((*ex)->samples()), e.model.vocab_size, &rows);
  cache[model] = rows;
  return rows;
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
    const std::map<Key, Row> ref = SingleRank(model);
    Experiment e = MakeExperiment(model, p);
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, me < n ? 0 : MPI_UNDEFINED, me, &sub);
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
    if (me != 0) return;
    std::map<Key, Row> got;
    for (const std::string& b : *all) Merge(b, e.model.vocab_size, &got);
    ASSERT_EQ(got.size(), ref.size()) << "phases × requests sampled";
    double worst = 0.0;
    for (const auto& [key, r] : ref) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << "phase " << key.first << " request " << key.second;
      EXPECT_EQ(it->second.token, r.token) << "phase " << key.first << " request " << key.second;
      double err = 0.0, mag = 1e-30;
      for (size_t v = 0; v < r.logits.size(); ++v) {
        ASSERT_FALSE(std::isnan(it->second.logits[v])) << "vocabulary entry " << v << " missing";
        err = std::max(err, std::abs(static_cast<double>(it->second.logits[v]) - r.logits[v]));
        mag = std::max(mag, std::abs(static_cast<double>(r.logits[v])));
      }
      worst = std::max(worst, err / mag);
    }
    EXPECT_LE(worst, 1e-4);
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
