#include "importers/trace_set.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_writer.h"

namespace shardscope::importers {
namespace {

using testing::ScratchDir;
using trace::WriteFile;

TEST(TraceSetTest, ClockAlignmentNamesRoundTrip) {
  EXPECT_EQ(ClockAlignmentName(ClockAlignment::kAsRecorded), "as-recorded");
  EXPECT_EQ(ClockAlignmentName(ClockAlignment::kFirstCollectiveEnd), "collective-end");
  for (ClockAlignment a : {ClockAlignment::kAsRecorded, ClockAlignment::kFirstCollectiveEnd}) {
    StatusOr<ClockAlignment> parsed = ParseClockAlignment(ClockAlignmentName(a));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_EQ(ParseClockAlignment("first").status().message(),
            "unknown clock alignment 'first' (as-recorded or collective-end)");
}

TEST(TraceSetTest, MissingRankIsReportedAndTheRestAnalysed) {
  ScratchDir dir;
  std::vector<std::string> paths;
  for (int r : {0, 1, 3}) {
    paths.push_back(dir.File(fmt::format("rank{}.json", r)));
    WriteFile(paths.back(), KinetoRankTrace(r, 4));
  }
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet(paths, {}, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->ranks, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(set->world_size, 4);
  EXPECT_EQ(set->missing_ranks, std::vector<int32_t>{2});
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_NE(set->warnings[0].find("no trace for rank 2 (1 of 4 ranks missing)"), std::string::npos)
      << set->warnings[0];
  EXPECT_EQ(t.metadata["trace_set"]["missing_ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(t.metadata["world_size"], 4);
  EXPECT_EQ(t.ops.size(), 6u);
  EXPECT_EQ(set->stats.ops, 6);
}

TEST(TraceSetTest, DuplicateRankAndDisagreeingWorldSizesAreErrors) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("c.json"), KinetoRankTrace(1, 4));
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto dup = ImportTraceSet({dir.File("a.json"), dir.File("b.json")}, {}, &builder);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find(dir.File("a.json") + " and " + dir.File("b.json") +
                                        ": both are rank 0"),
            std::string::npos)
      << dup.status().message();
  EXPECT_TRUE(t.ops.empty());  // found before any file was read in full
  auto world = ImportTraceSet({dir.File("a.json"), dir.File("c.json")}, {}, &builder);
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("world size 4, but " + dir.File("a.json") + " says 2"),
            std::string::npos)
      << world.status().message();
}

TEST(TraceSetTest, ClocksAsRecordedOrAlignedOnTheFirstCollectiveEnd) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("r1.json"), KinetoRankTrace(1, 2, /*shift_us=*/5000));
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  trace::Trace recorded;
  trace::TraceBuilder recorded_builder(&recorded);
  auto as_recorded = ImportTraceSet(paths, {}, &recorded_builder);
  ASSERT_TRUE(as_recorded.ok()) << as_recorded.status().ToString();
  ASSERT_TRUE(as_recorded->collective_end_spread_ns.has_value());
  EXPECT_EQ(*as_recorded->collective_end_spread_ns, 5'000'000);
  EXPECT_TRUE(as_recorded->clock_shift_ns.empty());
  ASSERT_EQ(as_recorded->warnings.size(), 1u);
  EXPECT_NE(as_recorded->warnings[0].find("differs by 5000.0 us"), std::string::npos)
      << as_recorded->warnings[0];
  TraceSetOptions options;
  options.alignment = ClockAlignment::kFirstCollectiveEnd;
  trace::Trace aligned;
  trace::TraceBuilder aligned_builder(&aligned);
  auto al = ImportTraceSet(paths, options, &aligned_builder);
  ASSERT_TRUE(al.ok()) << al.status().ToString();
  EXPECT_EQ(al->clock_shift_ns.at(0), 0);
  EXPECT_EQ(al->clock_shift_ns.at(1), -5'000'000);
  EXPECT_TRUE(al->warnings.empty());
  ASSERT_EQ(aligned.ops.size(), 4u);
  for (const trace::OpEvent& op : aligned.ops) {
    if (op.rank == 1 && op.name == "gemm") {
      EXPECT_EQ(op.ts_ns, 1'000'100'000);
    }
    if (op.is_comm()) {
      EXPECT_EQ(op.end_ns(), 1'000'300'000);
    }
  }
  for (const trace::SpanEvent& s : aligned.spans) EXPECT_EQ(s.ts_ns, 1'000'050'000);
  EXPECT_EQ(aligned.metadata["trace_set"]["clock_shift_ns"]["1"], -5'000'000);
}

// One NCCL kernel of a test rank: at `ts` µs, `elems` floats.
struct Call {
  int64_t ts, elems;
  std::string collective = "all_to_all";
};

// One rank's Kineto trace whose NCCL kernels are `calls`, in the group [0, 1] when `group`.
std::string CollectiveRank(int rank, const std::vector<Call>& calls, bool group = true) {
  std::string events;
  for (const Call& c : calls) {
    events += fmt::format(
        R"(,{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "pid": {0}, "tid": 20, )"
        R"("ts": {1}, "dur": 10, "args": {{"Collective name": "{3}", "In msg nelems": {2}, )"
        R"("dtype": "Float"{4}}}}})",
        rank, c.ts, c.elems, c.collective,
        group ? R"(, "Group size": 2, "Process Group Ranks": "[0, 1]")" : "");
  }
  return fmt::format(
      R"({{"schemaVersion": 1, "distributedInfo": {{"rank": {0}, "world_size": 2}},
"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": {0}, "tid": 7, "ts": 1, "dur": 5}}{1}]}})",
      rank, events);
}

// issue 17: ranks' first collectives were paired by position, so a rank profiled from a
// later point (its first all-reduce moves 340 MB, rank 0's a few hundred bytes) showed
// tens of ms of false clock skew, and collective-end alignment shifted it by that much.
TEST(TraceSetTest, FalseClockSkewFromUnpairableFirstCollectives) {
  ScratchDir dir;
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  // Rank 0's first call has no counterpart on rank 1: its second one pairs by size.
  WriteFile(dir.File("r0.json"),
            CollectiveRank(0, {{1000, 75, "allreduce"}, {50000, 85'000'000, "allreduce"}}));
  WriteFile(dir.File("r1.json"), CollectiveRank(1, {{50000, 85'000'000, "allreduce"}}));
  trace::Trace t0;
  trace::TraceBuilder builder0(&t0);
  auto by_size = ImportTraceSet(paths, {}, &builder0);
  ASSERT_TRUE(by_size.ok()) << by_size.status().ToString();
  ASSERT_TRUE(by_size->collective_end_spread_ns.has_value());
  EXPECT_EQ(*by_size->collective_end_spread_ns, 0);
  EXPECT_TRUE(by_size->warnings.empty());
  // A size seen twice on rank 0 and once on rank 1: which is which is unknown.
  WriteFile(dir.File("r0.json"),
            CollectiveRank(0, {{1000, 75, "allreduce"}, {50000, 75, "allreduce"}}));
  WriteFile(dir.File("r1.json"), CollectiveRank(1, {{50000, 75, "allreduce"}}));
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto recorded = ImportTraceSet(paths, {}, &builder);
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  EXPECT_FALSE(recorded->collective_end_spread_ns.has_value());
  EXPECT_TRUE(recorded->warnings.empty()) << recorded->warnings[0];
  EXPECT_NE(recorded->alignment_note.find("can be paired across ranks with confidence"),
            std::string::npos)
      << recorded->alignment_note;

  // The same calls seen by both ranks pair by kind, group and size, not by position.
  WriteFile(dir.File("r0.json"),
            CollectiveRank(0, {{1000, 75, "allreduce"}, {50000, 85'000'000, "allreduce"}}));
  WriteFile(dir.File("r1.json"),
            CollectiveRank(1, {{1200, 75, "allreduce"}, {50300, 85'000'000, "allreduce"}}));
  trace::Trace t3;
  trace::TraceBuilder builder3(&t3);
  auto paired = ImportTraceSet(paths, {}, &builder3);
  ASSERT_TRUE(paired.ok());
  ASSERT_TRUE(paired->collective_end_spread_ns.has_value());
  EXPECT_EQ(*paired->collective_end_spread_ns, 200'000);
}

// issue 35: an all-to-all's members need not finish together, so ranks whose only
// collectives are all-to-alls of equal kind and size got "the end of the first collective
// differs by 332 us (clock skew?)". Only all-reduce, all-gather, reduce-scatter and barrier
// ends are paired; without any, the spread is "not available" with the reason.
TEST(TraceSetTest, ClockSkewNotMeasuredOnAllToAll) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"), CollectiveRank(0, {{1000, 4096}, {5000, 4096}}));
  WriteFile(dir.File("r1.json"), CollectiveRank(1, {{1332, 4096}, {5332, 4096}}));
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet(paths, {}, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_FALSE(set->collective_end_spread_ns.has_value());
  EXPECT_TRUE(set->warnings.empty()) << set->warnings[0];
  EXPECT_NE(set->alignment_note.find("rank 0 ran no all-reduce, all-gather, reduce-scatter or "
                                     "barrier"),
            std::string::npos)
      << set->alignment_note;
  EXPECT_EQ(t.metadata["trace_set"]["collective_end_spread"],
            "not available: " + set->alignment_note);

  // An all-reduce after them is what the clocks are measured on (its ends coincide).
  WriteFile(dir.File("r0.json"), CollectiveRank(0, {{1000, 4096}, {9000, 256, "allreduce"}}));
  WriteFile(dir.File("r1.json"), CollectiveRank(1, {{1332, 4096}, {9002, 256, "allreduce"}}));
  trace::Trace t2;
  trace::TraceBuilder builder2(&t2);
  auto mixed = ImportTraceSet(paths, {}, &builder2);
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  ASSERT_TRUE(mixed->collective_end_spread_ns.has_value()) << mixed->alignment_note;
  EXPECT_EQ(*mixed->collective_end_spread_ns, 2'000);  // the all-reduce's, not 332 us
  EXPECT_TRUE(mixed->warnings.empty());
}

// issue 35: with nothing to pair, --align-clocks collective-end refused to guess only by a
// warning and went on; now it is an error naming the set and the reason, and nothing is
// delivered.
TEST(TraceSetTest, AlignClocksRefusesToGuess) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"), CollectiveRank(0, {{1000, 4096}}));
  WriteFile(dir.File("r1.json"), CollectiveRank(1, {{1332, 4096}}));
  TraceSetOptions align;
  align.alignment = ClockAlignment::kFirstCollectiveEnd;
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet({dir.File("r0.json"), dir.File("r1.json")}, align, &builder);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(set.status().message().find(dir.File("r0.json") +
                                        " (and 1 more file(s) of the set): "
                                        "--align-clocks collective-end cannot align"),
            std::string::npos)
      << set.status().message();
  EXPECT_NE(set.status().message().find("ran no all-reduce"), std::string::npos);
  EXPECT_TRUE(t.ops.empty());
  EXPECT_TRUE(t.metadata.empty());
}

// issue 35: a set of every rank's Kineto file that names no process group (older PyTorch)
// runs its collectives on the default group: when every rank ran the same calls, each is
// given the whole world, so wire bytes and bus bandwidth follow; when not, none is.
TEST(TraceSetTest, GroupsInferredFromACompleteSetOnly) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"),
            CollectiveRank(0, {{1000, 64, "allreduce"}, {2000, 8, "allreduce"}}, false));
  WriteFile(dir.File("r1.json"),
            CollectiveRank(1, {{1001, 64, "allreduce"}, {2001, 8, "allreduce"}}, false));
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet(paths, {}, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  int comm = 0;
  for (const trace::OpEvent& op : t.ops) {
    if (!op.is_comm()) continue;
    ++comm;
    EXPECT_EQ(op.group, (std::vector<int32_t>{0, 1}));
  }
  EXPECT_EQ(comm, 4);
  EXPECT_NE(t.metadata["trace_set"]["groups"].get<std::string>().find("given the whole world"),
            std::string::npos);
  ASSERT_TRUE(set->collective_end_spread_ns.has_value());  // now paired by group too
  EXPECT_EQ(*set->collective_end_spread_ns, 1'000);

  // Rank 1's second call has another size: not one sequence, no group given.
  WriteFile(dir.File("r1.json"),
            CollectiveRank(1, {{1001, 64, "allreduce"}, {2001, 16, "allreduce"}}, false));
  trace::Trace t2;
  trace::TraceBuilder builder2(&t2);
  auto differ = ImportTraceSet(paths, {}, &builder2);
  ASSERT_TRUE(differ.ok()) << differ.status().ToString();
  for (const trace::OpEvent& op : t2.ops) EXPECT_TRUE(op.group.empty());
  EXPECT_NE(t2.metadata["trace_set"]["groups"].get<std::string>().find("no group inferred"),
            std::string::npos);
}

TEST(TraceSetTest, GroupingKeepsStoreTracesApartAndJoinsOneWorld) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(1, 2));
  WriteFile(dir.File("single.json"), KinetoRankTrace(0, 1));
  WriteFile(dir.File("other_world.json"), KinetoRankTrace(0, 4));
  trace::Trace ours;
  ours.ops.push_back({});
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours.json")).ok());
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours2.json")).ok());
  auto runs =
      GroupTraceFiles({dir.File("a.json"), dir.File("ours.json"), dir.File("single.json"),
                       dir.File("b.json"), dir.File("other_world.json"), dir.File("ours2.json")},
                      std::nullopt);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  std::vector<std::vector<std::string>> want = {{dir.File("a.json"), dir.File("b.json")},
                                                {dir.File("ours.json")},
                                                {dir.File("single.json")},
                                                {dir.File("other_world.json")},
                                                {dir.File("ours2.json")}};
  EXPECT_EQ(*runs, want);
}

// A file's head is read and its format detected once: GroupTraceFiles hands
// each run's probes on, and ImportTraceSet imports with them, detecting nothing.
TEST(TraceSetTest, ProbesArePassedOnNotDetectedAgain) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(1, 2));
  std::vector<std::vector<TraceProbe>> probes;
  auto runs = GroupTraceFiles({dir.File("a.json"), dir.File("b.json")}, std::nullopt, &probes);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(probes.size(), 1u);
  ASSERT_EQ(probes[0].size(), 2u);
  EXPECT_EQ(probes[0][1].format, TraceFormat::kKineto);
  EXPECT_EQ(probes[0][1].rank, 1);

  TraceSetOptions options;
  options.probes = probes[0];
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet((*runs)[0], options, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->ranks, (std::vector<int32_t>{0, 1}));
  // The probe decides the importer: a Kineto file probed as a ShardScope trace
  // is read as one (its host events are ops of a Chrome trace), not re-detected.
  options.probes = {probes[0][0]};
  options.probes[0].format = TraceFormat::kShardScope;
  options.probes[0].rank.reset();
  trace::Trace as_chrome;
  trace::TraceBuilder chrome_builder(&as_chrome);
  auto chrome = ImportTraceSet({dir.File("a.json")}, options, &chrome_builder);
  ASSERT_TRUE(chrome.ok()) << chrome.status().ToString();
  ASSERT_EQ(chrome->files.size(), 1u);
  EXPECT_EQ(chrome->files[0].format, TraceFormat::kShardScope);
  options.probes = probes[0];
  auto mismatch = ImportTraceSet({dir.File("a.json")}, options, &chrome_builder);
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
}

// A JAX profile of two hosts (plugins/profile/<run>/<host>.xplane.pb), each
// numbering its TPUs from 0, is one run: host B's devices follow host A's.
TEST(TraceSetTest, MultiHostXspaceIsOneRunWithTheHostsDevicesInOrder) {
  const std::string xplane = SharedTestData("xla/tpu_inference_2.xplane.pb");
  SHARDSCOPE_NEED_SHARED_DATA(xplane);
  ScratchDir dir;
  std::filesystem::create_directories(dir.File("run1"));
  std::filesystem::create_directories(dir.File("run2"));
  for (const char* name :
       {"run1/hostA.xplane.pb", "run1/hostB.xplane.pb", "run2/hostA.xplane.pb"}) {
    std::filesystem::copy_file(xplane, dir.File(name));
  }
  trace::Trace one;
  trace::TraceBuilder one_builder(&one);
  auto single = ImportTrace(xplane, std::nullopt, &one_builder);
  if (!single.ok() && single.status().code() == StatusCode::kUnimplemented) {
    GTEST_SKIP() << single.status().message();  // built without protobuf
  }
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  ASSERT_FALSE(single->ranks.empty());
  const int32_t devices = single->ranks.back() + 1;

  auto runs = GroupTraceFiles({dir.File("run1/hostA.xplane.pb"), dir.File("run2/hostA.xplane.pb"),
                               dir.File("run1/hostB.xplane.pb")},
                              std::nullopt);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  std::vector<std::vector<std::string>> want = {
      {dir.File("run1/hostA.xplane.pb"), dir.File("run1/hostB.xplane.pb")},
      {dir.File("run2/hostA.xplane.pb")}};
  EXPECT_EQ(*runs, want);

  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet((*runs)[0], {}, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<int32_t> ranks;
  for (int32_t r = 0; r < 2 * devices; ++r) ranks.push_back(r);
  EXPECT_EQ(set->ranks, ranks);
  ASSERT_EQ(t.ops.size(), 2 * one.ops.size());
  // Host B's ops are host A's, device d as rank devices + d.
  for (size_t i = 0; i < one.ops.size(); ++i) {
    EXPECT_EQ(t.ops[one.ops.size() + i].rank, one.ops[i].rank + devices) << i;
    EXPECT_EQ(t.ops[one.ops.size() + i].name, one.ops[i].name) << i;
  }
  EXPECT_EQ(t.metadata["trace_set"]["files"][1]["rank_offset"], devices);
}

}  // namespace
}  // namespace shardscope::importers
