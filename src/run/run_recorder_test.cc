#include "run/run_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "plan/test_experiments.h"
#include "testing/scratch_dir.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace shardscope::run {
namespace {

namespace fs = std::filesystem;

class RunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_.path();
    ParallelSpec p;
    p.tp = 2;
    p.strategy = "tp2";
    experiment_ = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 16);
  }
  testing::ScratchDir scratch_{"recorder"};
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

// issue 33: served runs of one model at TP2, TP4 and TP8 (the same fixed-batch
// fields) go to three folders named for the plan, and a different workload to
// another; the same experiment again goes to the same folder. The store lists
// them back with their workload.
TEST_F(RunRecorderTest, ServedRunsAreFiledByPlanAndWorkload) {
  Experiment served = experiment_;
  served.parallel.strategy = "tensor";
  ServingSpec s;
  s.arrivals.process = ArrivalProcess::kPoisson;
  s.arrivals.rate = 40;
  s.requests = 120;
  served.serving = s;
  const trace::TraceStore store((dir_ / "store").string());
  std::set<std::string> dirs;
  for (int64_t tp : {2, 4, 8}) {
    served.parallel.tp = tp;
    const trace::RunKey key = StoreKeyOf(served);
    EXPECT_EQ(key.strategy, fmt::format("tensor_tp{}", tp));
    EXPECT_EQ(key.workload.rfind("served_poisson-40rps_n120_", 0), 0u) << key.workload;
    dirs.insert(store.RunDir(key));
  }
  EXPECT_EQ(dirs.size(), 3u);
  EXPECT_EQ(store.RunDir(StoreKeyOf(served)), store.RunDir(StoreKeyOf(served)));
  Experiment longer = served;
  longer.serving->prompt_tokens.value = 2048;  // same arrivals, other lengths
  EXPECT_NE(StoreKeyOf(longer).workload, StoreKeyOf(served).workload);
  DisaggregationSpec d;
  d.prefill.tp = 2;
  d.decode.tp = 4;
  d.decode.instances = 2;
  longer.serving->disaggregation = d;
  EXPECT_EQ(StoreKeyOf(longer).strategy, "disagg_prefill_tp2x1_decode_tp4x2");
  // A fixed batch keeps batch_{B}_seq_{S}.
  EXPECT_EQ(store.RunDir(StoreKeyOf(experiment_)),
            (dir_ / "store" / "tiny-dense" / "tp2" / "batch_2_seq_16").string());

  served.parallel.tp = 2;
  auto pl = Placement::Create(served);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  auto rec = RunRecorder::Open(served, RunMetadata(served, *pl, "sim", nlohmann::json::object()),
                               store.root(), "");
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_TRUE((*rec)->Close().ok());
  auto listed = store.List();
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key.strategy, "tensor_tp2");
  EXPECT_EQ((*listed)[0].key.workload, StoreKeyOf(served).workload);
  EXPECT_TRUE((*listed)[0].complete());
}

}  // namespace
}  // namespace shardscope::run
