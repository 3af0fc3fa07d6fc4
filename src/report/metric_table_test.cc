#include "report/metric_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace shardscope::report {
namespace {

analysis::AnalysisResult StoredRun() {
  analysis::AnalysisResult r;
  r.trace_path = "traces/m/tensor/batch_2_seq_128/trace_x.trace";
  r.metadata_path = "traces/m/tensor/batch_2_seq_128/metadata_x.json";
  r.identity = {"tp2_a100", "", "a100-sxm", "bf16", "sim", 1, 2};
  r.metrics.Add("ttft", "", 0.9997, "s");
  return r;
}

analysis::AnalysisResult ForeignRun() {
  analysis::AnalysisResult r;
  r.trace_path = "kineto.json";
  r.metrics.Add("ttft", "", 0.002, "s");
  return r;
}

TEST(MetricTableTest, ValuesReadAsPeopleWriteThem) {
  EXPECT_EQ(FormatValue(0.9997, "s"), "1 s");  // was "1e+03 ms"
  EXPECT_EQ(FormatValue(12345.6, "ratio"), "12346");
  EXPECT_EQ(FormatValue(123456789, "count"), "123456789");
  EXPECT_EQ(FormatValue(2.5e9, "B/s"), "2.5 GB/s");
  EXPECT_EQ(FormatValue(45.25, "%"), "45.25 %");
}

TEST(MetricTableTest, CsvHasTheIdentityColumnsEmptyForForeignTraces) {
  std::string csv = RenderAnalyses({StoredRun(), ForeignRun()}, {}, TableFormat::kCsv);
  EXPECT_EQ(csv,
            "trace,experiment,hardware,dtype,backend,metric,scope,value,unit,aggregation,"
            "unavailable\n"
            "traces/m/tensor/batch_2_seq_128/trace_x.trace,tp2_a100,a100-sxm,bf16,sim,ttft,,"
            "0.9997,s,,\n"
            "kineto.json,,,,,ttft,,0.002,s,,\n");
}

TEST(MetricTableTest, JsonHasTheIdentityOnlyWhereKnown) {
  auto j =
      nlohmann::json::parse(RenderAnalyses({StoredRun(), ForeignRun()}, {}, TableFormat::kJson));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["experiment"], "tp2_a100");
  EXPECT_EQ(j[0]["hardware"], "a100-sxm");
  EXPECT_EQ(j[0]["nodes"], 1);
  EXPECT_FALSE(j[0].contains("sweep"));
  EXPECT_FALSE(j[1].contains("experiment"));
  EXPECT_FALSE(j[1].contains("hardware"));
}

TEST(MetricTableTest, MarkdownNamesTheRun) {
  std::string md = RenderAnalyses({StoredRun()}, {}, TableFormat::kMarkdown);
  EXPECT_NE(md.find("run: experiment tp2_a100 · hardware a100-sxm · dtype bf16 · backend sim · "
                    "1 node · 2 ranks\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| ttft |  | 1 s |"), std::string::npos) << md;
  std::string foreign = RenderAnalyses({ForeignRun()}, {}, TableFormat::kMarkdown);
  EXPECT_EQ(foreign.find("run:"), std::string::npos) << foreign;
}

// issue 35: the report printed "1 s" and "282365444 s": three significant digits, trailing
// zeros kept, in a unit scaled to the value.
TEST(MetricTableTest, ReportNumbersThreeSignificantDigitsScaledUnits) {
  EXPECT_EQ(FormatReportValue(1.0, "s"), "1.00 s");
  EXPECT_EQ(FormatReportValue(0.0208, "s"), "20.8 ms");
  EXPECT_EQ(FormatReportValue(5.8e-3, "s"), "5.80 ms");
  EXPECT_EQ(FormatReportValue(0.9997, "s"), "1.00 s");  // rounds up into the next unit
  EXPECT_EQ(FormatReportValue(82.0, "s"), "82.0 s");
  EXPECT_EQ(FormatReportValue(1234.0, "s"), "20.6 min");
  EXPECT_EQ(FormatReportValue(282365444.0, "s"), "3.27e+03 d");
  EXPECT_EQ(FormatReportValue(2e-6, "s"), "2.00 us");
  EXPECT_EQ(FormatReportValue(20397600, "B"), "20.4 MB");
  EXPECT_EQ(FormatReportValue(1.87e9, "B/s"), "1.87 GB/s");
  EXPECT_EQ(FormatReportValue(999.6e6, "B/s"), "1.00 GB/s");
  EXPECT_EQ(FormatReportValue(12345, "tokens/s"), "12.3 k tokens/s");
  EXPECT_EQ(FormatReportValue(64, "count"), "64");
  EXPECT_EQ(FormatReportValue(5.607, "ratio"), "5.61");
  EXPECT_EQ(FormatReportValue(0.045, "ratio"), "0.0450");
  EXPECT_EQ(FormatReportValue(9.996, ""), "10.0");
  EXPECT_EQ(FormatReportValue(1.45e6, ""), "1.45 M");
  EXPECT_EQ(FormatReportValue(0, "s"), "0 s");
  EXPECT_EQ(FormatReportValue(NAN, "s"), "—");
}

}  // namespace
}  // namespace shardscope::report
