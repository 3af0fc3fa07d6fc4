#include "trace/run_identity.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

TEST(RunIdentityTest, ReadsTheExperimentJsonWhereRunHasNoFields) {
  // The layout of metadata written before the store recorded "run.experiment" & co.
  auto m = nlohmann::json::parse(R"({
    "experiment": {"name": "seed001_sp16_ring", "sweep": "seq_sweep", "backend": "cpu",
                   "cluster": {"name": "h100-sxm", "num_nodes": 16, "devices_per_node": 8},
                   "workload": {"dtype": "bf16"}, "parallelism": {"world_size": 16}},
    "backend": "sim",
    "cluster": {"num_nodes": 16, "devices_per_node": 8},
    "plan": {"world_size": 16, "rank_to_device": [0, 1, 2, 3, 4, 5, 6, 7,
                                                  8, 9, 10, 11, 12, 13, 14, 15]},
    "run": {"model": "llama", "strategy": "ring"}})");
  auto id = RunIdentityFromMetadata(m, "meta.json");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->experiment, "seed001_sp16_ring");
  EXPECT_EQ(id->sweep, "seq_sweep");
  EXPECT_EQ(id->hardware, "h100-sxm");
  EXPECT_EQ(id->dtype, "bf16");
  EXPECT_EQ(id->backend, "sim");  // the backend that ran it, not the experiment's default
  EXPECT_EQ(id->nodes, 2);
  EXPECT_EQ(id->ranks, 16);
  EXPECT_EQ(NodesAndRanks(*id), "2 nodes · 16 ranks");
  EXPECT_EQ(RunIdentityJson(*id).dump(),
            R"({"experiment":"seed001_sp16_ring","sweep":"seq_sweep","hardware":"h100-sxm",)"
            R"("dtype":"bf16","backend":"sim","nodes":2,"ranks":16})");
}

TEST(RunIdentityTest, NodesAreTheOnesTheRanksOccupyNotTheClustersSize) {
  auto two_ranks = nlohmann::json::parse(R"({
    "experiment": {"name": "tp2", "sweep": "tp2", "cluster": {"num_nodes": 16, "devices_per_node": 8}},
    "plan": {"world_size": 2, "rank_to_device": [0, 1]}})");
  auto id = RunIdentityFromMetadata(two_ranks, "m.json");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->nodes, 1);
  EXPECT_EQ(id->sweep, "");  // not a sweep: the loader records the name as the sweep
  EXPECT_EQ(NodesAndRanks(*id), "1 node · 2 ranks");
  // Without the placement, ranks fill nodes in order.
  auto no_plan = nlohmann::json::parse(
      R"({"cluster": {"devices_per_node": 8}, "experiment": {"parallelism": {"world_size": 12}}})");
  EXPECT_EQ(RunIdentityFromMetadata(no_plan, "m.json")->nodes, 2);
  auto bad = nlohmann::json::parse(
      R"({"cluster": {"devices_per_node": 8}, "plan": {"rank_to_device": ["gpu0"]}})");
  EXPECT_NE(RunIdentityFromMetadata(bad, "m.json").status().message().find("plan.rank_to_device"),
            std::string::npos);
}

TEST(RunIdentityTest, RunFieldsWinAndMissingOnesStayEmpty) {
  auto m = nlohmann::json::parse(
      R"({"run": {"hardware": "tpu-v5e", "nodes": 1}, "experiment": {"cluster": {"name": "x"}}})");
  auto id = RunIdentityFromMetadata(m, "meta.json");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->hardware, "tpu-v5e");
  EXPECT_EQ(id->experiment, "");
  EXPECT_FALSE(id->ranks.has_value());
  EXPECT_FALSE(id->empty());
  EXPECT_EQ(NodesAndRanks(*id), "1 node");
  auto none = RunIdentityFromMetadata(nlohmann::json::object(), "meta.json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(RunIdentityTest, AWrongTypeNamesTheSourceAndTheField) {
  auto m = nlohmann::json::parse(R"({"experiment": {"workload": {"dtype": 16}}})");
  auto id = RunIdentityFromMetadata(m, "traces/m/s/batch_1_seq_1/metadata_x.json");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().message(),
            "traces/m/s/batch_1_seq_1/metadata_x.json: metadata field 'experiment.workload.dtype' "
            "is a JSON number, expected a string");
  auto ranks =
      RunIdentityFromMetadata(nlohmann::json::parse(R"({"plan": {"world_size": 2.5}})"), "m.json");
  ASSERT_FALSE(ranks.ok());
  EXPECT_NE(ranks.status().message().find("'plan.world_size' is a fraction"), std::string::npos);
}

TEST(RunIdentityTest, FilterMatchesEveryGivenFieldAndTheSweepName) {
  RunIdentity id{"pt_2", "ep_sweep", "h100-sxm", "bf16", "sim", 1, 8};
  EXPECT_TRUE(IdentityFilter{}.Matches(id));
  EXPECT_TRUE((IdentityFilter{"pt_2", "", "", ""}.Matches(id)));
  EXPECT_TRUE((IdentityFilter{"ep_sweep", "h100-sxm", "bf16", "sim"}.Matches(id)));
  EXPECT_FALSE((IdentityFilter{"", "a100-sxm", "", ""}.Matches(id)));
  EXPECT_FALSE((IdentityFilter{"", "", "fp32", ""}.Matches(id)));
  EXPECT_FALSE((IdentityFilter{"", "", "", "cpu"}.Matches(id)));
}

TEST(RunIdentityTest, ReadingAFile) {
  ScratchDir dir;
  WriteFile(dir.File("ok.json"), R"({"backend": "cpu"})");
  WriteFile(dir.File("empty.json"), "");
  WriteFile(dir.File("array.json"), "[1]");
  WriteFile(dir.File("broken.json"), "{\"backend\": ");
  auto ok = ReadRunIdentity(dir.File("ok.json"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->backend, "cpu");
  auto empty = ReadRunIdentity(dir.File("empty.json"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto array = ReadRunIdentity(dir.File("array.json"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(),
            dir.File("array.json") + ": the run's metadata is not a JSON object");
  auto broken = ReadRunIdentity(dir.File("broken.json"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message(),
            dir.File("broken.json") + ": the run's metadata is not valid JSON");
  EXPECT_EQ(ReadRunIdentity(dir.File("missing.json")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace shardscope::trace
