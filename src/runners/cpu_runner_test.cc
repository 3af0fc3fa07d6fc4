// The CPU backend's checks made before mpirun starts: each bad input is one clear
// error (exit 2 on the command line), not a failure of every rank (exit 1).
#include "runners/cpu_runner.h"

#include <gtest/gtest.h>

#include "plan/test_experiments.h"

namespace shardscope::runners {
namespace {

Experiment TinyTp2() {
  ParallelSpec p;
  p.tp = 2;
  p.strategy = "tensor";
  Experiment e = testing::ZooExperiment("tiny-dense", "local-cpu", p, 1, 8);
  e.name = "tiny_tp2";
  return e;
}

// issue 35: `--mpirun-args '-np 5'` gave mpirun two rank counts ("error: error: …").
TEST(CpuRunnerTest, MpirunArgsSettingTheRankCountAreRefused) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-np", "5"}, {"--map-by", "node", "-n", "2"}, {"--np=4"}}) {
    run::RunOptions o;
    o.mpirun_args = args;
    auto b = CpuRunner::Create(o);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(b.status().message().find("sets the number of ranks"), std::string::npos)
        << b.status().message();
  }
  run::RunOptions fine;
  fine.mpirun_args = {"--map-by", "node"};
  EXPECT_TRUE(CpuRunner::Create(fine).ok());
}

// issue 35: a LayerNorm model on backend cpu was refused by the ranks after mpirun started.
TEST(CpuRunnerTest, LayerNormModelIsRefusedBeforeMpirun) {
  Experiment e = TinyTp2();
  e.model.norm = NormKind::kLayerNorm;
  const Status s = CpuRunner(runtime::FaultSpec{}).Supports(e);
  if (s.code() == StatusCode::kUnimplemented &&
      s.message().find("LayerNorm") == std::string::npos) {
    GTEST_SKIP() << "backend cpu not built: " << s.message();
  }
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("experiment 'tiny_tp2': not implemented: LayerNorm in the CPU "
                             "executor"),
            std::string::npos)
      << s.message();
}

// A qk_norm model (Qwen3) is simulated only; backend cpu refuses it before mpirun.
TEST(CpuRunnerTest, QkNormModelIsRefusedBeforeMpirun) {
  Experiment e = TinyTp2();
  e.model.qk_norm = true;
  const Status s = CpuRunner(runtime::FaultSpec{}).Supports(e);
  if (s.code() == StatusCode::kUnimplemented && s.message().find("qk_norm") == std::string::npos) {
    GTEST_SKIP() << "backend cpu not built: " << s.message();
  }
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("experiment 'tiny_tp2': not implemented: per-head q/k norms "
                             "(qk_norm) in the CPU executor"),
            std::string::npos)
      << s.message();
}

// issue 35: a fault naming a rank the job does not have never fired and said nothing.
TEST(CpuRunnerTest, FaultOnARankThatDoesNotExistIsRefused) {
  auto fault = runtime::ParseFaultSpec("rank=5,op=0");
  ASSERT_TRUE(fault.ok()) << fault.status().message();
  const Status s = CpuRunner(*fault).Supports(TinyTp2());
  if (s.code() == StatusCode::kUnimplemented) GTEST_SKIP() << "backend cpu not built";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("SHARDSCOPE_FAULT: experiment 'tiny_tp2': rank 5 does not exist "
                             "(the job has 2 ranks)"),
            std::string::npos)
      << s.message();
  auto rank1 = runtime::ParseFaultSpec("rank=1,op=0");
  EXPECT_TRUE(CpuRunner(*rank1).Supports(TinyTp2()).ok());
}

// issue 35: a fault naming an op the rank does not run never fired and said nothing;
// it is refused listing the ops there are (layer numbers folded into L<n>).
TEST(CpuRunnerTest, FaultOnAnOpThatDoesNotExistIsRefusedListingTheOps) {
  auto check = [](const std::string& spec) {
    auto fault = runtime::ParseFaultSpec(spec);
    EXPECT_TRUE(fault.ok()) << fault.status().message();
    return CpuRunner(*fault).Supports(TinyTp2());
  };
  const Status bad_name = check("rank=1,op=L99.attention");
  if (bad_name.code() == StatusCode::kUnimplemented) GTEST_SKIP() << "backend cpu not built";
  EXPECT_EQ(bad_name.code(), StatusCode::kInvalidArgument);
  const std::string& m = bad_name.message();
  EXPECT_NE(m.find("SHARDSCOPE_FAULT: experiment 'tiny_tp2': rank 1 runs no op 'L99.attention' "
                   "in prefill or decode (its ops: ids 0 to "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("L<n>.attention"), std::string::npos) << m;
  EXPECT_NE(m.find("L<n> for layers 0 to "), std::string::npos) << m;
  EXPECT_EQ(m.find("L0."), std::string::npos) << m;  // each layer's ops listed once
  EXPECT_NE(check("rank=1,op=99999").message().find("runs no op 99999 in prefill or decode"),
            std::string::npos);
  EXPECT_NE(check("rank=0,op=0,phase=decode:999").message().find("phase decode:999 never runs"),
            std::string::npos);
  // Ops the rank runs are accepted, by name or id, in any phase it has.
  EXPECT_TRUE(check("rank=1,op=L0.attention").ok()) << check("rank=1,op=L0.attention").message();
  EXPECT_TRUE(check("rank=1,op=3,phase=prefill").ok());
  EXPECT_TRUE(check("rank=0,op=L1.attention_decode,phase=decode:0").ok());
  EXPECT_NE(check("rank=0,op=L1.attention,phase=decode:0").message().find("L<n>.attention_decode"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope::runners
