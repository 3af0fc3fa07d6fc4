#include "trace/trace_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

std::string RunDirOf(const StoredTrace& t) {
  return std::filesystem::path(t.trace_path).parent_path().string();
}

TEST(TraceStoreTest, LaysOutTracesAsTheSeedsSay) {
  ScratchDir dir;
  TraceStore store(dir.File("traces"));
  RunKey key{"deepseek-v2-lite", "tensor", 8, 512, ""};
  StoredTrace stored;
  auto writer = store.Create(key, {{"experiment", {{"name", "tp4"}}}}, &stored);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  OpEvent op;
  op.name = "matmul";
  op.dur_ns = 5;
  (*writer)->AddOp(op);
  // Until Close(), only the metadata exists: no half trace under the final name.
  EXPECT_FALSE(std::filesystem::exists(stored.trace_path));
  ASSERT_TRUE((*writer)->Close().ok());
  std::string run_dir = dir.File("traces/deepseek-v2-lite/tensor/batch_8_seq_512");
  EXPECT_EQ(stored.trace_path, run_dir + "/trace_" + stored.timestamp + ".trace");
  EXPECT_EQ(stored.metadata_path, run_dir + "/metadata_" + stored.timestamp + ".json");
  EXPECT_TRUE(std::filesystem::exists(stored.trace_path));
  auto meta = nlohmann::json::parse(ReadWholeFile(stored.metadata_path));
  EXPECT_EQ(meta["experiment"]["name"], "tp4");
  EXPECT_EQ(meta["shardscope"]["version"], SHARDSCOPE_VERSION);
  EXPECT_EQ(meta["run"]["batch_size"], 8);
  EXPECT_TRUE(meta.contains("units"));
  auto trace = ReadTraceFile(stored.trace_path);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->metadata, meta);  // the trace carries the same metadata
  EXPECT_EQ(trace->ops.size(), 1u);
}

TEST(TraceStoreTest, TimestampsNeverCollide) {
  ScratchDir dir;
  TraceStore store(dir.path());
  RunKey key{"m", "s", 1, 1, ""};
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    StoredTrace stored;
    auto writer = store.Create(key, nlohmann::json::object(), &stored);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_TRUE(seen.insert(stored.timestamp).second) << stored.timestamp;
  }
  auto list = store.List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 50u);
}

TEST(TraceStoreTest, ListFiltersAndMarksIncompleteRuns) {
  ScratchDir dir;
  TraceStore store(dir.path());
  for (const char* model : {"a", "b"}) {
    for (const char* strategy : {"tp", "pp"}) {
      auto w = store.Create({model, strategy, 2, 16, ""}, nlohmann::json::object());
      ASSERT_TRUE(w.ok());
      ASSERT_TRUE((*w)->Close().ok());
    }
  }
  StoredTrace pending;
  auto open_writer = store.Create({"a", "tp", 4, 16, ""}, nlohmann::json::object(), &pending);
  ASSERT_TRUE(open_writer.ok());
  auto all = store.List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 5u);
  auto a_tp = store.List({"a", "tp"});
  ASSERT_TRUE(a_tp.ok());
  ASSERT_EQ(a_tp->size(), 2u);
  EXPECT_EQ((*a_tp)[0].key.batch_size, 2);
  EXPECT_TRUE((*a_tp)[0].complete());
  EXPECT_FALSE((*a_tp)[1].complete());  // still being written
  EXPECT_EQ(SanitizePathComponent("deepseek-ai/DeepSeek V3"), "deepseek-ai_DeepSeek_V3");
  EXPECT_EQ(SanitizePathComponent(".."), "_..");
}

TEST(TraceStoreTest, MissingRootIsEmpty) {
  TraceStore store("/nonexistent/shardscope/traces");
  auto list = store.List();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST(TraceStoreTest, GzipTraceIsNamedListedAndPairedWithItsMetadata) {
  ScratchDir dir;
  TraceStore store(dir.path());
  RunKey key{"m", "s", 2, 3, ""};
  StoredTrace stored;
  auto writer = store.Create(key, nlohmann::json::object(), &stored, TraceCompression::kGzip);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  OpEvent op;
  op.name = "matmul";
  op.dur_ns = 5;
  (*writer)->AddOp(op);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(stored.trace_path,
            dir.File("m/s/batch_2_seq_3/trace_" + stored.timestamp + ".trace.gz"));
  const std::string bytes = ReadWholeFile(stored.trace_path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
  auto list = store.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_TRUE((*list)[0].complete());
  EXPECT_EQ((*list)[0].trace_path, stored.trace_path);
  EXPECT_EQ(StoreMetadataPathFor(stored.trace_path), stored.metadata_path);
  auto trace = ReadTraceFile(stored.trace_path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->ops.size(), 1u);
}

// The metadata a run records (run/run_recorder.h), trimmed to what identifies it.
nlohmann::json RunMetadataOf(const std::string& experiment, const std::string& hardware,
                             const std::string& dtype, const std::string& backend) {
  return {{"experiment",
           {{"name", experiment},
            {"sweep", ""},
            {"cluster", {{"name", hardware}, {"num_nodes", 4}, {"devices_per_node", 8}}},
            {"workload", {{"dtype", dtype}}},
            {"backend", backend}}},
          {"backend", backend},
          {"plan", {{"world_size", 4}}}};
}

void StoreRun(const TraceStore& store, const nlohmann::json& metadata) {
  auto w = store.Create({"deepseek-v2-lite", "tensor", 2, 128, ""}, metadata);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
}

// issue 16: runs that differ only in hardware, dtype or backend share a folder;
// the list tells them apart and filters on each.
TEST(TraceStoreTest, RunsOfOneFolderAreToldApartByTheirIdentity) {
  ScratchDir dir;
  TraceStore store(dir.path());
  StoreRun(store, RunMetadataOf("tp4_h100", "h100-sxm", "bf16", "sim"));
  StoreRun(store, RunMetadataOf("tp4_a100", "a100-sxm", "bf16", "sim"));
  StoreRun(store, RunMetadataOf("tp4_fp32", "h100-sxm", "fp32", "cpu"));
  auto all = store.List();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  std::set<std::string> hardware;
  for (const StoredTrace& t : *all) {
    EXPECT_EQ(RunDirOf(t), dir.File("deepseek-v2-lite/tensor/batch_2_seq_128"));
    hardware.insert(t.identity.hardware);
    EXPECT_EQ(t.identity.nodes, 1);
    EXPECT_EQ(t.identity.ranks, 4);
  }
  EXPECT_EQ(hardware, (std::set<std::string>{"h100-sxm", "a100-sxm"}));

  ListFilter by_hardware;
  by_hardware.identity.hardware = "a100-sxm";
  auto a100 = store.List(by_hardware);
  ASSERT_TRUE(a100.ok());
  ASSERT_EQ(a100->size(), 1u);
  EXPECT_EQ((*a100)[0].identity.experiment, "tp4_a100");

  ListFilter by_dtype;
  by_dtype.identity.dtype = "fp32";
  auto fp32 = store.List(by_dtype);
  ASSERT_TRUE(fp32.ok());
  ASSERT_EQ(fp32->size(), 1u);
  EXPECT_EQ((*fp32)[0].identity.backend, "cpu");

  ListFilter by_backend_and_hardware;
  by_backend_and_hardware.identity.backend = "sim";
  by_backend_and_hardware.identity.hardware = "h100-sxm";
  auto sim_h100 = store.List(by_backend_and_hardware);
  ASSERT_TRUE(sim_h100.ok());
  ASSERT_EQ(sim_h100->size(), 1u);
  EXPECT_EQ((*sim_h100)[0].identity.experiment, "tp4_h100");

  ListFilter by_experiment;
  by_experiment.identity.experiment = "tp4_fp32";
  auto one = store.List(by_experiment);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  by_experiment.identity.experiment = "no_such_experiment";
  auto none = store.List(by_experiment);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(TraceStoreTest, MetadataRecordsTheIdentityUpFront) {
  ScratchDir dir;
  TraceStore store(dir.path());
  StoredTrace stored;
  auto w = store.Create({"m", "s", 1, 1, ""}, RunMetadataOf("e", "h200", "fp16", "sim"), &stored);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto meta = nlohmann::json::parse(ReadWholeFile(stored.metadata_path));
  EXPECT_EQ(meta["run"]["experiment"], "e");
  EXPECT_EQ(meta["run"]["hardware"], "h200");
  EXPECT_EQ(meta["run"]["dtype"], "fp16");
  EXPECT_EQ(meta["run"]["backend"], "sim");
  EXPECT_EQ(meta["run"]["nodes"], 1);
  EXPECT_EQ(meta["run"]["ranks"], 4);
  EXPECT_FALSE(meta["run"].contains("sweep"));  // empty fields are left out
}

TEST(TraceStoreTest, UnreadableMetadataIsAnErrorNamingTheFile) {
  ScratchDir dir;
  TraceStore store(dir.path());
  StoredTrace stored;
  auto w = store.Create({"m", "s", 1, 1, ""}, RunMetadataOf("e", "h200", "fp16", "sim"), &stored);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());
  WriteFile(stored.metadata_path, "{\"run\": ");
  auto broken = store.List();
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find(stored.metadata_path), std::string::npos)
      << broken.status().message();
  WriteFile(stored.metadata_path, R"({"run": {"hardware": 7}})");
  auto wrong_type = store.List();
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("'run.hardware'"), std::string::npos)
      << wrong_type.status().message();
  // An empty file is a name the store reserved for a run still writing its metadata.
  WriteFile(stored.metadata_path, "");
  auto reserved = store.List();
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  ASSERT_EQ(reserved->size(), 1u);
  EXPECT_TRUE((*reserved)[0].identity.empty());
}

TEST(TraceStoreTest, MetadataPathOnlyForStoreNames) {
  EXPECT_EQ(StoreMetadataPathFor("/a/trace_20260101T000000.000001.trace"),
            "/a/metadata_20260101T000000.000001.json");
  EXPECT_EQ(StoreMetadataPathFor("/a/trace_x_1.trace.gz"), "/a/metadata_x_1.json");
  EXPECT_EQ(StoreMetadataPathFor("/a/run.trace"), "");
  EXPECT_EQ(StoreMetadataPathFor("/a/trace_x.json"), "");
  EXPECT_EQ(StoreMetadataPathFor("/a/trace_x.trace.zst"), "");
}

}  // namespace
}  // namespace shardscope::trace
