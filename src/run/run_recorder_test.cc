#include "run/run_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "plan/test_experiments.h"
#include "trace/trace_reader.h"

namespace shardscope::run {
namespace {

namespace fs = std::filesystem;

class RunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shardscope_recorder_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    ParallelSpec p;
    p.tp = 2;
    p.strategy = "tp2";
    experiment_ = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 16);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Experiment experiment_;
};

TEST_F(RunRecorderTest, MetadataNamesBackendPlanAndSection) {
  auto pl = Placement::Create(experiment_);
  ASSERT_TRUE(pl.ok());
  const nlohmann::json meta = RunMetadata(experiment_, *pl, "sim", {{"answer", 42}});
  EXPECT_EQ(meta["backend"], "sim");
  EXPECT_EQ(meta["sim"]["answer"], 42);
  EXPECT_EQ(meta["plan"]["world_size"], 2);
  EXPECT_EQ(meta["plan"]["rank_to_device"].size(), 2u);
  ASSERT_EQ(meta["plan"]["groups"].size(), 1u);  // one tp group of 2 ranks
  EXPECT_EQ(meta["plan"]["groups"][0]["dim"], "tp");
  EXPECT_EQ(meta["experiment"]["workload"]["batch_size"], 2);
}

TEST_F(RunRecorderTest, WritesAFileOrIntoTheStore) {
  auto pl = Placement::Create(experiment_);
  ASSERT_TRUE(pl.ok());
  const nlohmann::json meta = RunMetadata(experiment_, *pl, "sim", nlohmann::json::object());
  const std::string file = (dir_ / "one.trace").string();
  {
    auto rec = RunRecorder::Open(experiment_, meta, "", file);
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    EXPECT_EQ((*rec)->trace_path(), file);
    EXPECT_TRUE((*rec)->metadata_path().empty());
    trace::SpanEvent span;
    span.phase = trace::Phase::kPrefill;
    span.name = "prefill";
    span.dur_ns = 5;
    (*rec)->writer()->AddSpan(span);
    ASSERT_TRUE((*rec)->Close().ok());
  }
  auto t = trace::ReadTraceFile(file);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->metadata["backend"], "sim");
  ASSERT_EQ(t->spans.size(), 1u);
  EXPECT_EQ(t->spans[0].dur_ns, 5);

  auto stored = RunRecorder::Open(experiment_, meta, (dir_ / "store").string(), "");
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  ASSERT_TRUE((*stored)->Close().ok());
  EXPECT_TRUE(fs::exists((*stored)->trace_path()));
  EXPECT_TRUE(fs::exists((*stored)->metadata_path()));
  EXPECT_NE((*stored)->trace_path().find("tiny-dense"), std::string::npos);
}

TEST_F(RunRecorderTest, AnUnclosedRecorderLeavesNoTrace) {
  auto pl = Placement::Create(experiment_);
  ASSERT_TRUE(pl.ok());
  const std::string file = (dir_ / "never.trace").string();
  {
    auto rec = RunRecorder::Open(experiment_, RunMetadata(experiment_, *pl, "cpu", {}), "", file);
    ASSERT_TRUE(rec.ok());
  }
  EXPECT_FALSE(fs::exists(file));
}

}  // namespace
}  // namespace shardscope::run
