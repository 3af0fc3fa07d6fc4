// The analyzer over multi-rank trace sets (moved from importers/trace_set_test.cc,
// which keeps the import-only assertions).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "importers/test_traces.h"
#include "importers/trace_set.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_writer.h"

namespace shardscope::analysis {
namespace {

using importers::ClockAlignment;
using importers::GroupTraceFiles;
using importers::ImportTraceSet;
using importers::KinetoRankTrace;
using testing::ScratchDir;
using trace::WriteFile;

const std::string kDlrm = importers::SharedTestData("kineto/param_dlrm_8rank");
const std::string kExpected = importers::RealTraceGolden("kineto_expected.json");

TEST(TraceSetAnalysisTest, MissingRankIsReportedAndTheRestAnalysed) {
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
  // The analyzer: metrics over three ranks, rank 2 named as missing.
  auto r = AnalyzeTraceSet(paths);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->metrics.Find("ranks")->value, 3);
  EXPECT_EQ(*r->metrics.Find("missing_ranks")->value, 1);
  // issue 17: one summary (the missing_ranks row and one warning), not a row per missing rank.
  EXPECT_EQ(r->metrics.Find("busy_time[rank 2]"), nullptr);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("no trace for rank 2 (1 of 4 ranks missing)"), std::string::npos)
      << r->warnings[0];
  // Waits at collectives with rank 2 cannot be known: not available rather than 0.
  EXPECT_FALSE(r->metrics.Find("sync_wait.max")->value.has_value());
  EXPECT_FALSE(r->metrics.Find("sync_wait[rank 0]")->value.has_value());
  // Rank 3: the kernel (50 us) and the all-reduce from 230 to 300 us.
  EXPECT_NEAR(*r->metrics.Find("busy_time[rank 3]")->value, 120e-6, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("comm_time[rank 3]")->value, 70e-6, 1e-15);
  EXPECT_EQ(r->trace_path, dir.path() + " (3 files)");
  EXPECT_EQ(r->warnings, set->warnings);
}

TEST(TraceSetAnalysisTest, ClocksAlignedOnTheFirstCollectiveEnd) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("r1.json"), KinetoRankTrace(1, 2, /*shift_us=*/5000));
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  // The analyzer's sync wait follows: rank 0 arrives 10 us before rank 1 once aligned.
  AnalyzeOptions aopt;
  aopt.alignment = ClockAlignment::kFirstCollectiveEnd;
  auto r = AnalyzeTraceSet(paths, aopt);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(*r->metrics.Find("sync_wait[rank 0]")->value, 10e-6, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("clock_spread")->value, 5e-3, 1e-15);
}

TEST(TraceSetAnalysisTest, AWholeDirectoryGroupsIntoRuns) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(1, 2));
  WriteFile(dir.File("single.json"), KinetoRankTrace(0, 1));
  WriteFile(dir.File("other_world.json"), KinetoRankTrace(0, 4));
  trace::Trace ours;
  ours.ops.push_back({});
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours.json")).ok());
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours2.json")).ok());
  // The whole directory through the analyzer: five runs (the two-rank set is one).
  auto results = AnalyzePaths({dir.path()});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(results->size(), 5u);
}

TEST(TraceSetAnalysisTest, DlrmEightRankSet) {
  SHARDSCOPE_NEED_SHARED_DATA(kDlrm);
  std::ifstream in(kExpected);
  ASSERT_TRUE(in) << kExpected;
  nlohmann::json want = nlohmann::json::parse(in)["sets"]["param_dlrm_8rank"];
  auto files = FindTraceFiles({kDlrm});
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 8u);
  auto runs = GroupTraceFiles(*files, std::nullopt);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);  // one world of 8
  auto r = AnalyzeTraceSet((*runs)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(*r->metrics.Find("ranks")->value, 8);
  EXPECT_EQ(*r->metrics.Find("missing_ranks")->value, 0);
  EXPECT_NEAR(*r->metrics.Find("clock_spread")->value,
              want["collective_end_spread_ns"].get<int64_t>() * 1e-9, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("busy_time.max")->value, want["busy_ns_max"].get<int64_t>() * 1e-9,
              1e-12);
  EXPECT_NEAR(*r->metrics.Find("comm_time.mean")->value * 8,
              want["comm_ns_sum"].get<int64_t>() * 1e-9, 1e-12);
  EXPECT_EQ(r->format, "kineto");
}

}  // namespace
}  // namespace shardscope::analysis
