#include "report/comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace shardscope::report {
namespace {

using analysis::AnalysisResult;

// A run with a run-level TTFT, a comm time per rank, and a reason for a missing bubble.
AnalysisResult MakeRun(const std::string& experiment, const std::string& hardware, double ttft,
                       std::vector<double> comm_per_rank) {
  AnalysisResult r;
  r.trace_path = "traces/m/s/batch_1_seq_1/trace_" + experiment + ".trace";
  r.identity.experiment = experiment;
  r.identity.hardware = hardware;
  r.identity.dtype = "bf16";
  r.identity.backend = "sim";
  r.identity.nodes = 1;
  r.identity.ranks = static_cast<int64_t>(comm_per_rank.size());
  r.metrics.Add("ttft", "", ttft, "s");
  for (size_t i = 0; i < comm_per_rank.size(); ++i) {
    r.metrics.Add("comm_time", "rank " + std::to_string(i), comm_per_rank[i], "s");
  }
  r.metrics.AddUnavailable("pipeline_bubble", "", "s", "no receive ops");
  return r;
}

const ComparisonRow* FindRow(const Comparison& c, const std::string& label) {
  for (const ComparisonRow& row : c.rows) {
    if (row.Label() == label) return &row;
  }
  return nullptr;
}

TEST(ComparisonTest, InstanceNumbersBecomeAWildcard) {
  EXPECT_EQ(InstanceWildcard("rank 3"), "rank *");
  EXPECT_EQ(InstanceWildcard("group tp 0-3 all_reduce"), "group tp * all_reduce");
  EXPECT_EQ(InstanceWildcard("group 0,2,4"), "group *");
  EXPECT_EQ(InstanceWildcard("rank 0 -> rank 1"), "rank * -> rank *");
  EXPECT_EQ(InstanceWildcard("rank 2 phase decode"), "rank * phase decode");
  EXPECT_EQ(InstanceWildcard("layer 12"), "layer *");
  EXPECT_EQ(InstanceWildcard(""), "");
  EXPECT_EQ(InstanceWildcard("phase decode"), "");
  EXPECT_EQ(InstanceWildcard("collective all_reduce"), "");
  EXPECT_EQ(InstanceWildcard("dim tp"), "");
}

TEST(ComparisonTest, ThreeRunsGetAValueAndARatioEach) {
  std::vector<AnalysisResult> runs = {MakeRun("a", "h100-sxm", 0.010, {1, 2, 3, 10}),
                                      MakeRun("b", "a100-sxm", 0.015, {2, 4}),
                                      MakeRun("c", "h100-sxm", 0.005, {1})};
  Comparison c = CompareAnalyses(runs, 0, {});
  ASSERT_EQ(c.runs.size(), 3u);
  EXPECT_EQ(c.runs[1].label, "b");
  EXPECT_EQ(c.runs[1].identity.hardware, "a100-sxm");
  // ttft, comm_time[rank *], pipeline_bubble: one row each, whatever the rank count.
  ASSERT_EQ(c.rows.size(), 3u);
  const ComparisonRow* ttft = FindRow(c, "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_FALSE(ttft->summarised);
  EXPECT_EQ(ttft->values, (std::vector<std::optional<double>>{0.010, 0.015, 0.005}));
  EXPECT_DOUBLE_EQ(*ttft->ratios[0], 1.0);
  EXPECT_DOUBLE_EQ(*ttft->ratios[1], 1.5);
  EXPECT_DOUBLE_EQ(*ttft->ratios[2], 0.5);

  const ComparisonRow* comm = FindRow(c, "comm_time[rank *]");
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->summarised);
  EXPECT_DOUBLE_EQ(*comm->values[0], 2.5);  // median of 1, 2, 3, 10
  EXPECT_DOUBLE_EQ(*comm->min[0], 1);
  EXPECT_DOUBLE_EQ(*comm->max[0], 10);
  EXPECT_EQ(comm->instances, (std::vector<int64_t>{4, 2, 1}));
  EXPECT_DOUBLE_EQ(*comm->values[1], 3);
  EXPECT_DOUBLE_EQ(*comm->ratios[1], 3 / 2.5);
  EXPECT_DOUBLE_EQ(*comm->values[2], 1);

  const ComparisonRow* bubble = FindRow(c, "pipeline_bubble");
  ASSERT_NE(bubble, nullptr);
  EXPECT_FALSE(bubble->values[0].has_value());
  EXPECT_EQ(bubble->unavailable[0], "no receive ops");
  EXPECT_FALSE(bubble->ratios[1].has_value());
}

TEST(ComparisonTest, PerRankKeepsEveryScopeAndTheBaselineCanBeAnyRun) {
  std::vector<AnalysisResult> runs = {MakeRun("a", "h100-sxm", 0.010, {1, 3}),
                                      MakeRun("b", "h100-sxm", 0.020, {2, 6})};
  CompareOptions options;
  options.per_rank = true;
  Comparison c = CompareAnalyses(runs, 1, options);
  EXPECT_EQ(c.rows.size(), 4u);  // ttft, two ranks, bubble
  const ComparisonRow* rank1 = FindRow(c, "comm_time[rank 1]");
  ASSERT_NE(rank1, nullptr);
  EXPECT_DOUBLE_EQ(*rank1->ratios[0], 0.5);  // 3 / 6: to run b
  EXPECT_DOUBLE_EQ(*rank1->ratios[1], 1.0);
}

TEST(ComparisonTest, LabelsTellRunsOfOneExperimentApart) {
  std::vector<AnalysisResult> runs = {MakeRun("tp4", "h100-sxm", 1, {1}),
                                      MakeRun("tp4", "a100-sxm", 1, {1}), MakeRun("", "", 1, {1})};
  runs[2].identity = {};
  Comparison c = CompareAnalyses(runs, 0, {});
  EXPECT_EQ(c.runs[0].label, "tp4 (h100-sxm bf16 sim)");
  EXPECT_EQ(c.runs[1].label, "tp4 (a100-sxm bf16 sim)");
  EXPECT_EQ(c.runs[2].label, "run 3");
}

TEST(ComparisonTest, MarkdownHasAColumnPerRunAndNumbersAsPeopleWriteThem) {
  std::vector<AnalysisResult> runs = {MakeRun("a", "h100-sxm", 0.9997, {1, 2, 3}),
                                      MakeRun("b", "a100-sxm", 1.5, {2, 4, 6})};
  std::string md = RenderComparison(CompareAnalyses(runs, 0, {}), TableFormat::kMarkdown);
  EXPECT_NE(md.find("| metric | a | b |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ttft | 1 s | 1.5 s (1.5×) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| comm_time[rank *] | 2 s [1 s … 3 s] | 4 s (2×) [2 s … 6 s] |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| b | a100-sxm | bf16 | sim | 1 node · 3 ranks | "
                    "traces/m/s/batch_1_seq_1/trace_b.trace |"),
            std::string::npos)
      << md;
  // A reason is printed once, under the table.
  EXPECT_NE(md.find("| pipeline_bubble | not available [1] | not available [1] |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("[1] not available: no receive ops"), std::string::npos) << md;
  EXPECT_EQ(md.find("e+0"), std::string::npos) << md;
}

TEST(ComparisonTest, JsonAndCsvCarryTheIdentityAndTheSummaries) {
  std::vector<AnalysisResult> runs = {MakeRun("a", "h100-sxm", 0.010, {1, 3}),
                                      MakeRun("b", "a100-sxm", 0.020, {2, 6})};
  Comparison c = CompareAnalyses(runs, 0, {});
  auto j = nlohmann::json::parse(RenderComparison(c, TableFormat::kJson));
  EXPECT_EQ(j["baseline"], "a");
  EXPECT_EQ(j["runs"][1]["hardware"], "a100-sxm");
  EXPECT_EQ(j["runs"][1]["ranks"], 2);
  const nlohmann::json& comm = j["metrics"][1];
  EXPECT_EQ(comm["scope"], "rank *");
  EXPECT_EQ(comm["values"], nlohmann::json({2.0, 4.0}));
  EXPECT_EQ(comm["ratios"], nlohmann::json({1.0, 2.0}));
  EXPECT_EQ(comm["min"], nlohmann::json({1.0, 2.0}));
  EXPECT_EQ(comm["instances"], nlohmann::json({2, 2}));
  EXPECT_EQ(j["metrics"][2]["unavailable"], nlohmann::json({"no receive ops", "no receive ops"}));

  std::string csv = RenderComparison(c, TableFormat::kCsv);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 3 * 2);
  EXPECT_NE(csv.find("\nttft,,s,b,traces/m/s/batch_1_seq_1/trace_b.trace,b,a100-sxm,bf16,sim,"
                     "0.02,2,,,,\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\ncomm_time,rank *,s,a,traces/m/s/batch_1_seq_1/trace_a.trace,a,h100-sxm,"
                     "bf16,sim,2,1,1,3,2,\n"),
            std::string::npos)
      << csv;
}

}  // namespace
}  // namespace shardscope::report
