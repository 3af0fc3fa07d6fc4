#include "report/html_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

#include "core/units.h"
#include "report/html_charts.h"
#include "report/html_page.h"
#include "report/html_sections.h"
#include "report/html_timeline.h"
#include "report/metric_table.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"

namespace shardscope::report {
namespace {

using nlohmann::json;

constexpr const char* kTrace = "tests/data/golden/tp_allreduce/trace.json";

const json* FindSection(const json& data, const std::string& id) {
  for (const json& s : data["sections"]) {
    if (s["id"] == id) return &s;
  }
  return nullptr;
}

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LoadChartJs().ok())
      GTEST_SKIP() << "Chart.js not installed (apt-get install libjs-chart.js)";
  }
  testing::ScratchDir dir_;
};

TEST_F(HtmlReportTest, EmbedsTheTracesFiguresAndIsSelfContained) {
  HtmlReportOptions options;
  options.paths = {kTrace};
  const std::string out = dir_.File("report.html");
  ASSERT_TRUE(WriteHtmlReport(options, out).ok());
  const std::string html = trace::ReadWholeFile(out);
  // Nothing is fetched: no external script, stylesheet or image.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("Chart.js"), std::string::npos);  // the library is inlined

  StatusOr<json> data = ExtractReportData(html);
  ASSERT_TRUE(data.ok()) << data.status().message();
  for (const char* id : {"summary", "breakdown", "timeline", "traffic", "bandwidth", "memory",
                         "experts", "sweeps", "comparison"}) {
    EXPECT_NE(FindSection(*data, id), nullptr) << id;
  }
  // Summary: the golden trace's TTFT (40 us) and TPOT (11 us).
  const json& summary = (*FindSection(*data, "summary"))["tables"][0];
  ASSERT_EQ(summary["rows"].size(), 1u);
  EXPECT_EQ(summary["rows"][0][2], FormatReportValue(40e-6, "s"));
  EXPECT_EQ(summary["rows"][0][3], FormatReportValue(11e-6, "s"));
  // Breakdown: ranks 0 and 1 stacked in us; rank 0 computes 41 us with nothing overlapped.
  const json& breakdown = (*FindSection(*data, "breakdown"))["charts"][0];
  EXPECT_EQ(breakdown["config"]["data"]["labels"], json({"0", "1"}));
  EXPECT_EQ(breakdown["config"]["options"]["scales"]["y"]["title"]["text"], "time (us)");
  EXPECT_NEAR(breakdown["config"]["data"]["datasets"][0]["data"][0].get<double>(), 41.0, 1e-9);
  EXPECT_EQ(breakdown["config"]["data"]["datasets"][0]["label"], "compute only");
  // Timeline: one lane per rank under the phase lane, with the prefill marked.
  const json& timeline = (*FindSection(*data, "timeline"))["charts"][0];
  EXPECT_EQ(timeline["config"]["data"]["labels"], json({"phases / steps", "rank 0", "rank 1"}));
  EXPECT_FALSE(timeline["table"]["rows"].empty());
  // No sweep in one run, no baseline: both say why.
  EXPECT_TRUE((*FindSection(*data, "sweeps"))["charts"].empty());
  EXPECT_NE((*FindSection(*data, "sweeps"))["note"].get<std::string>().find("No sweep"),
            std::string::npos);
  EXPECT_NE((*FindSection(*data, "comparison"))["note"].get<std::string>().find("--baseline"),
            std::string::npos);
}

TEST_F(HtmlReportTest, BadInputIsAnErrorAndLeavesTheOldFile) {
  const std::string out = dir_.File("report.html");
  trace::WriteFile(out, "old report");
  HtmlReportOptions options;
  options.paths = {dir_.File("missing.trace")};
  Status s = WriteHtmlReport(options, out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing.trace"), std::string::npos) << s.message();
  EXPECT_EQ(trace::ReadWholeFile(out), "old report");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_.path())) ++files;
  EXPECT_EQ(files, 1u);  // no temporary file left behind
}

TEST_F(HtmlReportTest, BaselineGivesRatios) {
  HtmlReportOptions options;
  options.paths = {kTrace};
  options.baseline = {kTrace};
  const std::string out = dir_.File("r.html");
  ASSERT_TRUE(WriteHtmlReport(options, out).ok());
  StatusOr<json> data = ExtractReportData(trace::ReadWholeFile(out));
  ASSERT_TRUE(data.ok());
  const json& chart = (*FindSection(*data, "comparison"))["charts"][0];
  EXPECT_DOUBLE_EQ(chart["config"]["data"]["datasets"][0]["data"][0].get<double>(), 1.0);  // TTFT
}

TEST(HtmlPageTest, MissingChartJsNamesTheDebianPackage) {
  StatusOr<std::string> js = LoadChartJs("/nonexistent/chart.min.js");
  ASSERT_FALSE(js.ok());
  EXPECT_NE(js.status().message().find("libjs-chart.js"), std::string::npos);
}

TEST(HtmlPageTest, JsonCannotCloseTheScriptElement) {
  json data = {{"title", "</script><script>alert(1)</script>"}, {"sections", json::array()}};
  StatusOr<std::string> html = RenderHtmlPage(data, "var Chart = 1;");
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find("</script><script>alert"), std::string::npos);
  StatusOr<json> back = ExtractReportData(*html);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)["title"], data["title"]);
}

TEST(HtmlChartsTest, DisplayUnitsFollowTheMagnitude) {
  EXPECT_EQ(PickDisplayUnit("s", 2e-3).label, "ms");
  EXPECT_EQ(PickDisplayUnit("s", 40e-6).label, "us");
  EXPECT_EQ(PickDisplayUnit("s", 3).label, "s");
  EXPECT_EQ(PickDisplayUnit("B", 5e9).label, "GB");
  EXPECT_DOUBLE_EQ(PickDisplayUnit("B/s", 4e11).divisor, 1e9);
  EXPECT_EQ(PickDisplayUnit("ratio", 3).label, "");
}

TEST(HtmlChartsTest, HeatmapSkipsEmptyCellsAndListsTheLargest) {
  Chart c = Heatmap("h", "t", {{0, 2e6}, {1e6, 0}}, "to rank", "from rank", "bytes", "B");
  const json& points = c.config["data"]["datasets"][0]["data"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0], json({{"x", 1}, {"y", 0}, {"v", 2.0}}));  // MB
  ASSERT_EQ(c.table.rows.size(), 2u);
  EXPECT_EQ(c.table.rows[0][0], "0");  // the largest cell first: from 0 to 1
}

// issue 35: one 82 s run flattened 21 others on a linear axis.
TEST(HtmlChartsTest, LogAxisOverTwoDecades) {
  std::vector<std::string> runs = {"a", "b", "c"};
  Chart wide = BarChart("w", "t", runs, {{"TTFT", {82.0, 0.5, 1.2}}}, "run", "TTFT", "s", false);
  EXPECT_EQ(wide.config["options"]["scales"]["y"]["type"], "logarithmic");
  EXPECT_NE(
      wide.config["options"]["scales"]["y"]["title"]["text"].get<std::string>().find("log scale"),
      std::string::npos);
  Chart narrow = BarChart("n", "t", runs, {{"TTFT", {82.0, 1.0, 0.9}}}, "run", "TTFT", "s", false);
  EXPECT_FALSE(narrow.config["options"]["scales"]["y"].contains("type"));  // 91×: linear
  Chart two = BarChart("2", "t", runs, {{"TTFT", {50.0, 1.0, 1.0}}}, "run", "TTFT", "s", false);
  EXPECT_FALSE(two.config["options"]["scales"]["y"].contains("type"));  // 50×: linear
  Chart zero = BarChart("z", "t", runs, {{"TTFT", {82.0, 0.0, 0.1}}}, "run", "TTFT", "s", false);
  EXPECT_FALSE(zero.config["options"]["scales"]["y"].contains("type"));  // a zero bar
  Chart stacked = BarChart("s", "t", runs, {{"TTFT", {82.0, 0.1, 0.1}}}, "run", "TTFT", "s", true);
  EXPECT_FALSE(stacked.config["options"]["scales"]["y"].contains("type"));
  Chart line = LineChart("l", "t", {1, 2, 3}, {{"busbw", {1e6, 1e8, 1e9}}}, "size (B)", "busbw",
                         "B/s", true);
  EXPECT_EQ(line.config["options"]["scales"]["y"]["type"], "logarithmic");
}

// issue 35: the traffic heatmap's ticks fell between ranks (-0.5, 0.5, …).
TEST(HtmlChartsTest, HeatmapTicksAreWholeRanks) {
  std::vector<std::vector<double>> m(128, std::vector<double>(128, 1.0));
  Chart c = Heatmap("h", "t", m, "to rank", "from rank", "bytes", "B");
  for (const char* axis : {"x", "y"}) {
    const json& ticks = c.config["options"]["scales"][axis]["ticks"];
    EXPECT_EQ(ticks["precision"], 0) << axis;
    EXPECT_EQ(ticks["stepSize"], 8) << axis;  // 16 labels for 128 ranks
  }
  Chart small = Heatmap("h", "t", {{0, 1}, {1, 0}}, "to rank", "from rank", "bytes", "B");
  EXPECT_EQ(small.config["options"]["scales"]["x"]["ticks"]["stepSize"], 1);
}

ReportRun SweepRun(int ep, int seq, double ttft) {
  ReportRun r;
  r.label = "ep" + std::to_string(ep);
  r.metadata = {{"experiment",
                 {{"name", "moe"},
                  {"sweep", "moe"},
                  {"parallelism", {{"ep_size", ep}, {"tp_size", 1}}},
                  {"workload", {{"sequence_length", seq}, {"batch_size", 8}}}}}};
  r.analysis.metrics.Add("ttft", "", ttft, "s");
  return r;
}

TEST(HtmlSectionsTest, SweepDrawsEachMetricAgainstTheSweptValue) {
  std::vector<ReportRun> runs = {SweepRun(8, 128, 1e-3), SweepRun(16, 128, 2e-3),
                                 SweepRun(8, 512, 3e-3), SweepRun(16, 512, 4e-3)};
  Section s = SweepSection(runs);
  ASSERT_EQ(s.charts.size(), 4u);  // TTFT, TPOT, throughput, memory
  const json& ttft = s.charts[0].config;
  EXPECT_EQ(ttft["options"]["scales"]["x"]["title"]["text"], "EP degree");
  ASSERT_EQ(ttft["data"]["datasets"].size(), 2u);  // one line per sequence length
  EXPECT_EQ(ttft["data"]["datasets"][0]["label"], "sequence length (tokens) 128");
  EXPECT_EQ(ttft["data"]["datasets"][0]["data"][1], json({{"x", 16.0}, {"y", 2.0}}));  // ms
}

// A served run as the store's metadata holds it: per-request percentiles at a
// Poisson rate, TTFT growing with the rate (hand-picked numbers).
ReportRun ServedRun(double rate, double ttft_p50, double ttft_p99) {
  ReportRun r;
  r.label = fmt::format("serve_rate{:g}", rate);
  const json stat = {{"mean", 0.02}, {"p50", 0.02}, {"p90", 0.03}, {"p99", 0.05}};
  json m = {
      {"ttft_s", {{"mean", ttft_p50}, {"p50", ttft_p50}, {"p90", ttft_p99}, {"p99", ttft_p99}}},
      {"tpot_s", stat},
      {"itl_s", stat},
      {"e2e_latency_s", stat},
      {"queueing_delay_s", stat},
      {"requests_per_s", rate * 0.9},
      {"goodput_requests_per_s", rate * 0.5},
      {"output_tokens_per_s", rate * 100}};
  r.metadata = {{"experiment",
                 {{"name", r.label},
                  {"sweep", "serve"},
                  {"serving", {{"workload", {{"arrivals", {{"rate_per_s", rate}}}}}}}}},
                {"sim", {{"serving", {{"metrics", m}}}}}};
  return r;
}

TEST(HtmlSectionsTest, ServedRunsShowLatencyPercentilesAndTheLoadCurve) {
  EXPECT_TRUE(ServingSection({SweepRun(8, 128, 1e-3)}).charts.empty());
  EXPECT_NE(ServingSection({SweepRun(8, 128, 1e-3)}).note.find("No served run"), std::string::npos);
  std::vector<ReportRun> runs = {ServedRun(4, 0.1, 0.3), ServedRun(1, 0.05, 0.08),
                                 ServedRun(16, 2.0, 6.0)};
  Section s = ServingSection(runs);
  // 5 latency bar charts + requests/s + tokens/s per run; the sweep: TTFT, TPOT, throughput.
  ASSERT_EQ(s.charts.size(), 10u);
  const json& ttft_bars = s.charts[0].config;
  EXPECT_EQ(s.charts[0].id, "serving-ttft_s");
  ASSERT_EQ(ttft_bars["data"]["datasets"].size(), 3u);  // p50, p90, p99
  EXPECT_EQ(ttft_bars["data"]["datasets"][2]["label"], "p99");
  const json& curve = s.charts[7].config;
  EXPECT_EQ(s.charts[7].id, "serving-sweep-0-ttft_s");
  EXPECT_EQ(curve["options"]["scales"]["x"]["title"]["text"], "arrival rate (requests/s)");
  // Sorted by rate: 1, 4, 16 req/s; p99 TTFT in seconds (the axis picks s for 6 s).
  const json& p99 = curve["data"]["datasets"][2]["data"];
  ASSERT_EQ(p99.size(), 3u);
  EXPECT_EQ(p99[0], json({{"x", 1.0}, {"y", 0.08}}));
  EXPECT_EQ(p99[2], json({{"x", 16.0}, {"y", 6.0}}));
  const json& goodput = s.charts[9].config["data"]["datasets"][1]["data"];
  EXPECT_EQ(goodput[1], json({{"x", 4.0}, {"y", 2.0}}));
}

// issue 35: a served run's summary row was a wall of "not available: no prefill span…" in
// every cell; it shows its own figures, and a reason is given once per column, not per cell.
TEST(HtmlSectionsTest, ServedRunsSummaryShowsTheirOwnFigures) {
  ReportRun foreign;
  foreign.label = "kineto";
  foreign.analysis.metrics.AddUnavailable("ttft", "", "s", "no prefill span");
  foreign.analysis.metrics.AddUnavailable("tpot", "", "s", "no prefill span");
  ReportRun foreign2 = foreign;
  foreign2.label = "kineto2";
  ReportRun served = ServedRun(4, 0.1, 0.3);
  served.analysis.metrics.AddUnavailable("ttft", "", "s", "no prefill span");
  Section s = SummarySection({served, foreign, foreign2});
  const Table& t = s.tables[0];
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][2], "100 ms (p99 300 ms)");  // TTFT p50 (p99)
  EXPECT_EQ(t.rows[0][3], "20.0 ms (p99 50.0 ms)");
  EXPECT_EQ(t.rows[1][2], "—");
  for (const auto& row : t.rows) {
    for (const std::string& cell : row) EXPECT_EQ(cell.find("not available"), std::string::npos);
  }
  // One reason per column, naming the runs it applies to.
  EXPECT_NE(t.note.find("TTFT: no prefill span (kineto, kineto2)"), std::string::npos) << t.note;
  EXPECT_EQ(t.note.find("no prefill span", t.note.find("TTFT: no prefill span") + 10),
            t.note.find("TPOT: no prefill span") + 6)
      << t.note;
  const Table* per_request = nullptr;
  for (const Table& x : s.tables) {
    if (x.title.starts_with("Served runs")) per_request = &x;
  }
  ASSERT_NE(per_request, nullptr);
  ASSERT_EQ(per_request->rows.size(), 1u);
  EXPECT_EQ(per_request->rows[0],
            (std::vector<std::string>{"serve_rate4", "100 ms", "300 ms", "20.0 ms", "50.0 ms",
                                      "3.60 requests/s", "2.00 requests/s", "400 tokens/s"}));
}

TEST(HtmlSectionsTest, SummaryPutsEachRunAgainstItsRecordedBounds) {
  ReportRun sim = SweepRun(8, 128, 3e-3);  // TTFT 3 ms in its trace
  sim.analysis.metrics.Add("tpot", "", 2e-3, "s");
  sim.metadata["sim"] = {
      {"bounds", {{"ttft_s", 1e-3}, {"tpot_s", 1.6e-3}, {"dominant", "memory bandwidth"}}}};
  ReportRun measured = SweepRun(16, 128, 1e-3);  // no bounds: no row
  Section s = SummarySection({sim, measured});
  const Table* bounds = nullptr;
  for (const Table& t : s.tables) {
    if (t.title.starts_with("Physical bounds")) bounds = &t;
  }
  ASSERT_NE(bounds, nullptr);
  ASSERT_EQ(bounds->rows.size(), 1u);
  const std::vector<std::string>& row = bounds->rows[0];
  EXPECT_EQ(row[0], "ep8");
  EXPECT_EQ(row[3], "3.00×");  // 3 ms / 1 ms
  EXPECT_EQ(row[6], "1.25×");  // 2 ms / 1.6 ms
  EXPECT_EQ(row[7], "memory bandwidth");
  // Claims get the bound in the claim's unit.
  sim.metadata["experiment"]["claims"] = {{"tpot_ms", 1.0}};
  Section with_claims = SummarySection({sim});
  const Table* claims = nullptr;
  for (const Table& t : with_claims.tables) {
    if (t.title.starts_with("Claims")) claims = &t;
  }
  ASSERT_NE(claims, nullptr);
  ASSERT_EQ(claims->rows.size(), 1u);
  EXPECT_EQ(claims->rows[0][3], "2.00");  // this run: 2 ms
  EXPECT_EQ(claims->rows[0][5], "1.60");  // the TPOT bound: 1.6 ms
  EXPECT_EQ(SummarySection({measured}).note.find("1.00×") != std::string::npos, true);
  EXPECT_NE(SummarySection({measured}).note.find("No run here carries bounds"), std::string::npos);
}

// The note's "no claims" sentence was decided from the claims table after it was moved
// into the section, so a run with claims was also said to state none.
TEST(HtmlSectionsTest, SummaryNoteSaysNoClaimsOnlyWithoutClaims) {
  ReportRun with = SweepRun(8, 128, 3e-3);
  with.analysis.metrics.Add("tpot", "", 2e-3, "s");
  with.metadata["experiment"]["claims"] = {{"tpot_ms", 1.0}};
  const Section s = SummarySection({with});
  bool has_claims_table = false;
  for (const Table& t : s.tables) has_claims_table |= t.title.starts_with("Claims");
  EXPECT_TRUE(has_claims_table);
  EXPECT_EQ(s.note.find("No run states claims"), std::string::npos) << s.note;
  const ReportRun without = SweepRun(16, 128, 1e-3);
  EXPECT_NE(SummarySection({without}).note.find("No run states claims"), std::string::npos);
}

TEST(HtmlSectionsTest, ExpertHeatmapIsTokensOverTheLayerMean) {
  ReportRun r;
  r.label = "moe";
  // Layer 3 (the first MoE layer): expert 0 got 10 tokens, expert 1 30 (mean 20).
  r.analysis.expert_tokens = {{3, {{0, 10}, {1, 30}}}, {4, {{0, 20}, {1, 20}}}};
  Section s = ExpertSection({r});
  const Chart* heat = nullptr;
  for (const Chart& c : s.charts) {
    if (c.id == "experts-heatmap-0") heat = &c;
  }
  ASSERT_NE(heat, nullptr);
  EXPECT_TRUE(heat->heatmap);
  std::map<std::pair<int, int>, double> cells;
  for (const json& p : heat->config["data"]["datasets"][0]["data"]) {
    cells[{p["y"].get<int>(), p["x"].get<int>()}] = p["v"].get<double>();
  }
  EXPECT_EQ(cells.size(), 4u);  // dense layers 0-2 have no cells
  EXPECT_DOUBLE_EQ(cells.at({3, 0}), 0.5);
  EXPECT_DOUBLE_EQ(cells.at({3, 1}), 1.5);
  EXPECT_DOUBLE_EQ(cells.at({4, 1}), 1.0);
}

TEST(HtmlSectionsTest, BusBandwidthAgainstMessageSize) {
  auto runs = LoadReportRuns({kTrace}, {});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_FALSE(runs->front().analysis.bandwidth_by_size.empty());
  Section s = BandwidthSection(*runs);
  const Chart* size = nullptr;
  for (const Chart& c : s.charts) {
    if (c.id == "busbw-size-0") size = &c;
  }
  ASSERT_NE(size, nullptr);
  const json& datasets = size->config["data"]["datasets"];
  ASSERT_GE(datasets.size(), 1u);
  EXPECT_EQ(datasets[0]["label"], "all_reduce (tp)");
  // Each point is its bucket's busbw, as the analyzer computed it.
  const analysis::SizeBandwidth& b = runs->front().analysis.bandwidth_by_size.front();
  EXPECT_EQ(datasets[0]["data"][0]["x"].get<double>(), b.bucket_bytes);
  EXPECT_DOUBLE_EQ(b.busbw, 20e6);  // the golden trace's all-reduce: 20 MB/s of bus bandwidth
  EXPECT_DOUBLE_EQ(datasets[0]["data"][0]["y"].get<double>(), 20.0);  // shown in MB/s
  // A foreign or measured trace says nothing of algorithms: no table.
  EXPECT_TRUE(s.tables.empty());
}

// A simulated run's comm ops carry their algorithm and protocol: one row per
// collective, dimension and size bucket, each choice with its op count.
TEST(HtmlSectionsTest, BandwidthShowsTheAlgorithmAndProtocolPerCollective) {
  auto runs = LoadReportRuns({kTrace}, {});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  using analysis::CommChoice;
  runs->front().analysis.comm_choices = {
      {Collective::kAllReduce, Dim::kTp, 1 << 20, "ring/ll128", 12},
      {Collective::kAllReduce, Dim::kTp, 1 << 20, "tree/ll", 4},
      {Collective::kAllToAll, Dim::kEp, 1 << 10, "low_latency", 8}};
  Section s = BandwidthSection(*runs);
  ASSERT_EQ(s.tables.size(), 1u);
  const Table& t = s.tables[0];
  EXPECT_EQ(t.columns.back(), "algorithm / protocol");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{
                           "all_reduce", "tp", FormatBytes(1 << 20) + " – " + FormatBytes(2 << 20),
                           "16", "ring/ll128 ×12, tree/ll ×4"}));
  EXPECT_EQ(t.rows[1][0], "all_to_all");
  EXPECT_EQ(t.rows[1][4], "low_latency ×8");
}

TEST(HtmlSectionsTest, TrafficIntervalsPerDimensionAndPair) {
  ReportRun r;
  r.label = "tp2pp2";
  analysis::MetricSet& m = r.analysis.metrics;
  // Hand-picked: tp calls 20 us apart (p50 18, p99 30), a tp call followed by a pp send
  // after 3.5 us, and overlapping pp calls (a negative gap).
  for (auto [scope, mean, p50, p99] : std::vector<std::tuple<std::string, double, double, double>>{
           {"dim tp", 20e-6, 18e-6, 30e-6},
           {"dim pp", -1e-6, -1e-6, 0},
           {"dims tp -> pp", 3.5e-6, 3e-6, 5e-6}}) {
    m.Add("comm_gap.mean", scope, mean, "s");
    m.Add("comm_gap.p50", scope, p50, "s");
    m.Add("comm_gap.p99", scope, p99, "s");
  }
  m.Add("comm_gap.mean", "rank 0", 1.0, "s");  // not a dimension: not drawn
  Section s = TrafficSection({r});
  ASSERT_EQ(s.charts.size(), 1u);  // gaps; no inter-arrival metrics, no traffic matrix
  EXPECT_EQ(s.charts[0].id, "traffic-comm_gap-0");
  const json& data = s.charts[0].config["data"];
  EXPECT_EQ(data["labels"], json({"tp", "pp", "tp -> pp"}));
  ASSERT_EQ(data["datasets"].size(), 3u);
  EXPECT_EQ(data["datasets"][1]["label"], "mean");
  // In us on the axis (the chart's display unit).
  EXPECT_DOUBLE_EQ(data["datasets"][1]["data"][0].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(data["datasets"][0]["data"][1].get<double>(), -1.0);
  EXPECT_DOUBLE_EQ(data["datasets"][2]["data"][2].get<double>(), 5.0);
}

TEST(HtmlTimelineTest, BinsEachRanksOpsAndMarksPhases) {
  StatusOr<Timeline> t = ReadTimeline(kTrace, 62);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->busy.size(), 2u);
  EXPECT_EQ(t->end_ns - t->begin_ns, 62000);
  // Rank 0 computes during the first 10 us (attention); bins are resampled from finer
  // ones, so edges are off by at most one fine bin (here 16 ns of 1 us).
  EXPECT_NEAR(t->busy.at(0)[0][0], 1.0, 0.02);
  EXPECT_NEAR(t->busy.at(0)[5][1], 0.0, 0.02);
  ASSERT_FALSE(t->marks.empty());
  EXPECT_EQ(t->marks.front().second, "prefill");
}

// Foreign traces get a timeline too, from the events their importer hands the analyzer.
TEST(HtmlTimelineTest, AForeignTraceHasATimeline) {
  const std::string kineto = std::string(SHARDSCOPE_SOURCE_DIR) +
                             "/../shared/testdata/kineto/sglang_Qwen3-8B_decode.json.gz";
  if (!std::filesystem::exists(kineto)) GTEST_SKIP() << "no " << kineto;
  auto runs = LoadReportRuns({kineto}, {});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  const Timeline& t = runs->front().timeline;
  ASSERT_FALSE(t.empty());
  EXPECT_GT(t.end_ns, t.begin_ns);
  double compute = 0;  // a decode step of GPU kernels: some bins are busy computing
  for (const auto& bin : t.busy.begin()->second) compute += bin[0];
  EXPECT_GT(compute, 0);
}

// The report bins the timeline during the analyzer's read of the trace (one pass):
// the same timeline as a read of its own.
TEST(HtmlTimelineTest, TheAnalyzersReadGivesTheSameTimeline) {
  StatusOr<Timeline> alone = ReadTimeline(kTrace);
  auto runs = LoadReportRuns({kTrace}, {});
  ASSERT_TRUE(alone.ok() && runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  const Timeline& t = runs->front().timeline;
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.begin_ns, alone->begin_ns);
  EXPECT_EQ(t.end_ns, alone->end_ns);
  EXPECT_EQ(t.busy, alone->busy);
  EXPECT_EQ(t.marks, alone->marks);
  EXPECT_NE(runs->front().analysis.metrics.Find("ttft"), nullptr);
}

}  // namespace
}  // namespace shardscope::report
