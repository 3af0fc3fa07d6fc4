// RankStatus: op naming in failure messages, the shared record the launcher
// reads, and the handlers for a crash, exit() and termination (death tests).
#include "runtime/rank_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "testing/scratch_dir.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

Op Compute(int32_t id, OpKind kind, int32_t layer, OpRole role = OpRole::kNone) {
  Op op;
  op.id = id;
  op.kind = kind;
  op.layer = layer;
  op.role = role;
  return op;
}

class RankStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(scratch_.path()) / "status";
    program_.ops = {Compute(0, OpKind::kEmbedding, -1), Compute(1, OpKind::kAttention, 0)};
  }

  // Starts a record for rank 3 positioned at op 1 of decode step 4.
  std::unique_ptr<RankStatus> StartAtOp1() {
    auto status = RankStatus::Start(dir_.string(), 3);
    status->position()->program.store(&program_);
    status->position()->phase_index.store(5);
    status->position()->op.store(1);
    return status;
  }

  testing::ScratchDir scratch_{"rank_status"};
  fs::path dir_;
  RankProgram program_;
};

TEST(RankStateTest, EveryStateHasItsName) {
  EXPECT_EQ(RankStateName(RankState::kRunning), "running");
  EXPECT_EQ(RankStateName(RankState::kDone), "done");
  EXPECT_EQ(RankStateName(RankState::kFailed), "failed");
  EXPECT_EQ(RankStateName(RankState::kCrashed), "crashed");
  EXPECT_EQ(RankStateName(RankState::kStopped), "stopped");
  EXPECT_EQ(RankStateName(RankState::kExited), "exited");
  EXPECT_EQ(RankStateName(static_cast<RankState>(0)), "unknown");  // a record not yet written
}

TEST(OpContextTest, NamesTheOpLikeOpNameWithKindLayerAndPhase) {
  Op norm = Compute(3, OpKind::kNorm, 2, OpRole::kInputNorm);
  EXPECT_EQ(OpName(norm), "L2.norm.input");
  EXPECT_EQ(OpContext(norm, 0), "op 3 'L2.norm.input' (norm, layer 2, prefill)");
  Op head = Compute(40, OpKind::kLmHead, -1);
  EXPECT_EQ(OpContext(head, 3), "op 40 'lm_head' (lm_head, decode step 2)");
  Op ring = Compute(7, OpKind::kAttention, 1);
  ring.sp_step = 2;
  EXPECT_EQ(OpContext(ring, 0), "op 7 '" + OpName(ring) + "' (attention, layer 1, prefill)");
  Op ar;
  ar.id = 12;
  ar.kind = OpKind::kComm;
  ar.collective = Collective::kAllReduce;
  ar.dim = Dim::kTp;
  ar.role = OpRole::kAttnReduce;
  ar.layer = 1;
  EXPECT_EQ(OpContext(ar, 1), "op 12 '" + OpName(ar) + "' (allreduce, layer 1, decode step 0)");
  EXPECT_EQ(OpName(ar), "allreduce.tp.attn.L1");
}

TEST_F(RankStatusTest, TheLauncherReadsStateOpAndMessage) {
  {
    auto status = StartAtOp1();
    status->Set(RankState::kFailed, 0, "rank 3 failed in op 1: boom");
  }
  std::vector<RankReport> reports = ReadRankStatuses(dir_.string());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rank, 3);
  EXPECT_EQ(reports[0].pid, getpid());
  EXPECT_EQ(reports[0].state, RankState::kFailed);
  EXPECT_EQ(reports[0].phase_index, 5);
  EXPECT_EQ(reports[0].op, 1);
  EXPECT_EQ(reports[0].message, "rank 3 failed in op 1: boom");
  EXPECT_TRUE(ReadRankStatuses((dir_ / "missing").string()).empty());
}

TEST_F(RankStatusTest, WithoutADirectoryTheRecordLivesInMemory) {
  auto status = RankStatus::Start("", 0);
  ASSERT_NE(status->position(), nullptr);
  status->position()->op.store(2);
  EXPECT_EQ(status->position()->op.load(), 2);
}

TEST_F(RankStatusTest, ACrashPrintsTheRankAndTheOpAndIsRecorded) {
  EXPECT_EXIT(
      {
        // The handler chains to the previous one: the default here, as in a plain build
        // (under AddressSanitizer it would be the sanitizer's, which reports and exits).
        signal(SIGSEGV, SIG_DFL);
        auto status = StartAtOp1();
        raise(SIGSEGV);
      },
      ::testing::KilledBySignal(SIGSEGV),
      "rank 3 crashed with signal 11 \\(SIGSEGV\\) in op 1 'L0.attention' \\(attention, layer 0, "
      "decode step 4\\)");
  std::vector<RankReport> reports = ReadRankStatuses(dir_.string());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, RankState::kCrashed);
  EXPECT_EQ(reports[0].detail, SIGSEGV);
  EXPECT_EQ(reports[0].op, 1);
}

TEST_F(RankStatusTest, ExitInTheMiddleOfARunSaysWhere) {
  EXPECT_EXIT(
      {
        auto status = StartAtOp1();
        std::exit(4);
      },
      ::testing::ExitedWithCode(4), "rank 3 exited with status 4 in op 1 'L0.attention'");
  std::vector<RankReport> reports = ReadRankStatuses(dir_.string());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, RankState::kExited);
  EXPECT_EQ(reports[0].detail, 4);
}

TEST_F(RankStatusTest, TerminationRemovesTheFilesBeingWritten) {
  fs::create_directories(dir_);
  const fs::path partial = dir_ / "trace.tmp";
  std::ofstream(partial) << "{\"traceEvents\": [";
  EXPECT_EXIT(
      {
        auto status = StartAtOp1();
        status->AddCleanupFile(partial.string());
        raise(SIGTERM);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_FALSE(fs::exists(partial));
  std::vector<RankReport> reports = ReadRankStatuses(dir_.string());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, RankState::kStopped);
  EXPECT_EQ(reports[0].detail, SIGTERM);
}

TEST_F(RankStatusTest, ClearedCleanupFilesStay) {
  fs::create_directories(dir_);
  const fs::path done = dir_ / "trace.done";
  std::ofstream(done) << "{}";
  EXPECT_EXIT(
      {
        auto status = StartAtOp1();
        status->AddCleanupFile(done.string());
        status->ClearCleanupFiles();
        raise(SIGTERM);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_TRUE(fs::exists(done));
}

// issue 35: SIGTERM to one rank said "a rank failed before running (its message is
// above)" with nothing above.
TEST(DescribeNoFailureTest, NamesTheStoppedRanksOrSaysNoRankStarted) {
  RankReport stopped;
  stopped.rank = 1;
  stopped.state = RankState::kStopped;
  stopped.detail = SIGTERM;
  RankReport done;
  done.rank = 0;
  done.state = RankState::kDone;
  EXPECT_EQ(DescribeNoFailure({done, stopped}),
            "no rank failed; the ranks were stopped by a signal from outside the job (rank 1 by "
            "SIGTERM)");
  EXPECT_EQ(DescribeNoFailure({}),
            "no rank started running (mpirun's own message, if any, is above)");
  EXPECT_EQ(DescribeNoFailure({done}),
            "no rank recorded a failure (mpirun's own message, if any, is above)");
}

}  // namespace
}  // namespace shardscope::runtime
