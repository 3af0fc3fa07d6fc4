#include "calibrate/nccl_tests_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace shardscope::calibrate {
namespace {

// nccl-tests prints a float in a column of `width` with as many decimals as fit.
std::string Num(double v, int width) {
  int digits = 0;
  for (double p = 1; v >= p; p *= 10) ++digits;
  if (digits < width - 2) return fmt::format("{:>{}.2f}", v, width);
  if (digits < width - 1) return fmt::format("{:>{}.1f}", v, width);
  if (digits < width + 1) return fmt::format("{:>{}.0f}", v, width);
  return fmt::format("{:>{}.1e}", v, width);
}

struct Gen {
  std::string redop = "sum";
  int root = -1;
  int ranks = 8;
  double factor = 1.75;    // busbw / algbw
  int64_t count_div = 1;   // count = size / 4 / count_div
  double latency_us = 20;  // time = latency + size / algbw
  double algbw_gb_s = 200;
  bool check_oop = true, check_ip = true;
  bool per_iter = false;
};

std::string Timing(double t_us, double size, double factor, bool checked, bool per_iter) {
  const double alg = size / (t_us * 1e3);
  std::string s = fmt::format("  {}  {}  {}  {}", Num(t_us, 7), Num(alg, 6), Num(alg * factor, 6),
                              checked ? "     0" : "   N/A");
  if (per_iter) {
    s += fmt::format("  {}  {}  {}  {}", Num(t_us * 0.9, 7), Num(t_us * 1.2, 7), Num(t_us * 1.1, 7),
                     Num(3.5, 7));
  }
  return s;
}

std::string Header(bool per_iter, bool timestamp = false) {
  std::string h =
      "#\n#                                                              out-of-place"
      "                       in-place\n";
  if (per_iter) {
    h += fmt::format(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  "
        "{:>7}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "i_min",
        "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99",
        "i_cv%");
  } else {
    h += fmt::format(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  "
        "{:>6} {}\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong", timestamp ? "timestamp" : "");
  }
  h += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  return h;
}

std::string Table(const Gen& g, int64_t from = 8, int64_t to = int64_t{1} << 30) {
  std::string out = Header(g.per_iter);
  for (int64_t size = from; size <= to; size *= 4) {
    const double t = g.latency_us + static_cast<double>(size) / (g.algbw_gb_s * 1e3);
    out += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", size, size / 4 / g.count_div, "float",
                       g.redop, g.root);
    out += Timing(t, static_cast<double>(size), g.factor, g.check_oop, g.per_iter);
    out += Timing(t * 1.01, static_cast<double>(size), g.factor, g.check_ip, g.per_iter);
    out += "\n";
  }
  out += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 42.5 \n#\n";
  return out;
}

std::string RankLines(int ranks, int per_host) {
  std::string out = "# Using devices\n";
  for (int r = 0; r < ranks; ++r) {
    out += fmt::format(
        "#  Rank {:2} Group  0 Pid {:6} on {:>10} device {:2} [0000:{:02x}:00] "
        "NVIDIA H100 80GB HBM3\n",
        r, 1000 + r / per_host, fmt::format("node{}", r / per_host), r % per_host,
        0x18 + r % per_host);
  }
  return out;
}

std::string Preamble(int threads, int gpus) {
  return fmt::format(
      "# nccl-tests version 2.13.11 nccl-headers=22602 nccl-library=22602\n"
      "# nThread {} nGpus {} minBytes 8 maxBytes 1073741824 step: 4(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n",
      threads, gpus);
}

TEST(NcclTestsLogTest, SingleProcessAllReduceFromTheCommandLine) {
  Gen g;
  const std::string log = "$ ./build/all_reduce_perf -b 8 -e 1G -f 4 -g 8\n" + Preamble(1, 8) +
                          RankLines(8, 8) + Table(g);
  auto tables = ParseNcclTestsLog(log, "ar.log", std::nullopt);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  ASSERT_EQ(tables->size(), 1u);
  const NcclTestsTable& t = (*tables)[0];
  EXPECT_EQ(t.collective, Collective::kAllReduce);
  EXPECT_NE(t.collective_from.find("all_reduce_perf"), std::string::npos);
  EXPECT_EQ(t.ranks, 8);
  ASSERT_EQ(t.rows.size(), 14u);  // 8 B … 1 GiB by ×4
  EXPECT_EQ(t.rows[0].bytes, 8);
  EXPECT_EQ(t.rows[0].count, 2);
  EXPECT_EQ(t.rows[0].redop, "sum");
  EXPECT_NEAR(t.rows[0].out_of_place.seconds, 20e-6, 0.01e-6);
  EXPECT_TRUE(t.rows[0].out_of_place.checked);
  // 1 GiB: 20 us + 5368.7 us; the in-place column 1 % slower.
  // 512 MiB (the last size ≤ 1 GiB): 20 us + 2684.4 us.
  EXPECT_NEAR(t.rows.back().out_of_place.seconds, 20e-6 + (1 << 29) / 200e9, 2e-9 * 2700);
  EXPECT_NEAR(t.rows.back().in_place.seconds / t.rows.back().out_of_place.seconds, 1.01, 1e-3);
  EXPECT_NEAR(t.avg_busbw, 42.5e9, 1);
}

TEST(NcclTestsLogTest, MpiRunTellsAllReduceFromItsBusFactor) {
  Gen g;
  g.ranks = 16;
  g.factor = 2.0 * 15 / 16;
  const std::string log = Preamble(1, 1) + RankLines(16, 8) + Table(g);
  auto tables = ParseNcclTestsLog(log, "mpi.log", std::nullopt);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  EXPECT_EQ((*tables)[0].ranks, 16);
  EXPECT_EQ((*tables)[0].collective, Collective::kAllReduce);
  EXPECT_EQ((*tables)[0].collective_from, "the columns");
}

TEST(NcclTestsLogTest, SendRecvAndAllToAllFromTheirColumns) {
  Gen sr;
  sr.factor = 1;
  sr.check_ip = false;  // sendrecv validates out-of-place only
  auto a = ParseNcclTestsLog(Preamble(1, 8) + RankLines(8, 8) + Table(sr), "sr.log", std::nullopt);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)[0].collective, Collective::kSend);

  Gen a2a;
  a2a.redop = "none";
  a2a.factor = 7.0 / 8;
  a2a.count_div = 8;
  a2a.check_ip = false;
  auto b =
      ParseNcclTestsLog(Preamble(1, 8) + RankLines(8, 8) + Table(a2a, 64), "a2a.log", std::nullopt);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)[0].collective, Collective::kAllToAll);

  Gen ag = a2a;
  ag.check_ip = true;
  auto c =
      ParseNcclTestsLog(Preamble(1, 8) + RankLines(8, 8) + Table(ag, 64), "ag.log", std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)[0].collective, Collective::kAllGather);

  Gen rs;
  rs.factor = 7.0 / 8;
  rs.count_div = 8;
  auto d =
      ParseNcclTestsLog(Preamble(1, 8) + RankLines(8, 8) + Table(rs, 64), "rs.log", std::nullopt);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)[0].collective, Collective::kReduceScatter);

  Gen bc;
  bc.redop = "none";
  bc.root = 0;
  bc.factor = 1;
  auto e = ParseNcclTestsLog(Preamble(1, 8) + RankLines(8, 8) + Table(bc), "bc.log", std::nullopt);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)[0].collective, Collective::kBroadcast);
}

TEST(NcclTestsLogTest, AmbiguousTableNeedsAName) {
  // Two ranks without validation: all_reduce and sendrecv print the same columns.
  Gen g;
  g.factor = 1;
  g.check_oop = g.check_ip = false;
  const std::string log = Preamble(1, 2) + RankLines(2, 2) + Table(g);
  auto bad = ParseNcclTestsLog(log, "two.log", std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("two.log:"), std::string::npos);
  EXPECT_NE(bad.status().message().find("--nccl-tests all_reduce=two.log"), std::string::npos)
      << bad.status().message();
  auto named = ParseNcclTestsLog(log, "two.log", Collective::kSend);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ((*named)[0].collective, Collective::kSend);
  EXPECT_EQ((*named)[0].collective_from, "named by the user");
  // A name that contradicts the binary the log ran is an error.
  auto conflict = ParseNcclTestsLog("# Collective test starting: all_gather_perf\n" + log,
                                    "two.log", Collective::kSend);
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("two.log:1: the log ran all_gather_perf"),
            std::string::npos)
      << conflict.status().message();
}

TEST(NcclTestsLogTest, OlderAllToAllWithAnEmptyRedop) {
  // An older alltoall_perf printed an empty redop field and ran without -c.
  std::string log = Preamble(1, 4) + RankLines(4, 4) + Header(false);
  for (int64_t size : {1024, 4096, 16384}) {
    const double t = 10 + static_cast<double>(size) / 50e3;
    log += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", size, size / 16, "float", "", -1);
    log += Timing(t, size, 0.75, false, false) + Timing(t, size, 0.75, false, false) + "\n";
  }
  auto tables = ParseNcclTestsLog(log, "old.log", std::nullopt);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  EXPECT_EQ((*tables)[0].collective, Collective::kAllToAll);
  EXPECT_EQ((*tables)[0].rows.size(), 3u);
}

TEST(NcclTestsLogTest, PerIterationColumnsTimestampsAndLongTimes) {
  Gen g;
  g.per_iter = true;
  g.algbw_gb_s = 1.5;  // slow: 32 GiB takes 2.3e+07 us
  auto tables = ParseNcclTestsLog("# Collective test starting: all_reduce_perf\n" + Preamble(2, 4) +
                                      Table(g, 8, int64_t{1} << 35),
                                  "iter.log", std::nullopt);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const NcclTestsTable& t = (*tables)[0];
  EXPECT_EQ(t.ranks, 8);  // nThread 2 × nGpus 4
  EXPECT_EQ(t.ranks_from, "nThread x nGpus");
  // 32 GiB at 1.5 GB/s: 2.29e7 us, printed "2.3e+07": the time comes from algbw (1.50).
  const double want = 20e-6 + static_cast<double>(int64_t{1} << 35) / 1.5e9;
  EXPECT_NEAR(t.rows.back().out_of_place.seconds / want, 1, 0.004);

  std::string stamped = Preamble(1, 8) + RankLines(8, 8) + Header(false, true);
  stamped +=
      fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", 1048576, 262144, "float", "sum", -1) +
      Timing(30, 1048576, 1.75, true, false) + Timing(30, 1048576, 1.75, true, false) +
      "  2026-11-29 06:20:44\n";
  auto s = ParseNcclTestsLog(stamped, "ts.log", Collective::kAllReduce);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NEAR((*s)[0].rows[0].out_of_place.seconds, 30e-6, 0.03e-6);
}

TEST(NcclTestsLogTest, SeveralRunsInOneLog) {
  Gen ar;
  Gen ag;
  ag.redop = "none";
  ag.factor = 7.0 / 8;
  ag.count_div = 8;
  const std::string log = "# Collective test starting: all_reduce_perf\n" + Preamble(1, 8) +
                          RankLines(8, 8) + Table(ar) +
                          "# Collective test concluded: all_reduce_perf\n\n"
                          "NCCL INFO some line 12 34\n"
                          "# Collective test starting: all_gather_perf\n" +
                          Preamble(1, 8) + RankLines(8, 8) + Table(ag, 64);
  auto tables = ParseNcclTestsLog(log, "two-runs.log", std::nullopt);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  ASSERT_EQ(tables->size(), 2u);
  EXPECT_EQ((*tables)[0].collective, Collective::kAllReduce);
  EXPECT_EQ((*tables)[1].collective, Collective::kAllGather);
}

TEST(NcclTestsLogTest, ErrorsNameTheFileAndLine) {
  Gen g;
  std::string log = "$ all_reduce_perf -g 8\n" + Preamble(1, 8) + RankLines(8, 8) + Table(g);
  // A truncated row.
  std::string bad = log;
  const size_t at = bad.find("\n         512");
  ASSERT_NE(at, std::string::npos);
  const size_t line_no =
      static_cast<size_t>(std::count(bad.begin(), bad.begin() + at + 1, '\n')) + 1;
  bad.insert(at + 1, "         512           128     float     sum      -1    20.01\n");
  auto r = ParseNcclTestsLog(bad, "bad.log", std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find(fmt::format("bad.log:{}: a table row with 6 fields", line_no)),
      std::string::npos)
      << r.status().message();
  // A time that is no number.
  std::string nan = log;
  const size_t t = nan.find("   20.00");
  ASSERT_NE(t, std::string::npos);
  nan.replace(t, 8, "   x0.00");
  auto n = ParseNcclTestsLog(nan, "nan.log", std::nullopt);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("time 'x0.00' is not a number"), std::string::npos)
      << n.status().message();
  // No table.
  auto none = ParseNcclTestsLog("hello\n", "empty.log", std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("empty.log: no nccl-tests table"), std::string::npos);
  // A test the simulator does not model.
  auto reduce =
      ParseNcclTestsLog("$ ./reduce_perf -g 8\n" + Preamble(1, 8) + RankLines(8, 8) + Table(g),
                        "reduce.log", std::nullopt);
  ASSERT_FALSE(reduce.ok());
  EXPECT_NE(reduce.status().message().find("reduce.log:1: reduce_perf"), std::string::npos)
      << reduce.status().message();
  // Rank lines that contradict the printed bus factor (16 ranks' 1.875).
  Gen g16 = g;
  g16.factor = 1.875;
  auto mismatch =
      ParseNcclTestsLog("$ all_reduce_perf\n" + Preamble(1, 8) + RankLines(8, 8) + Table(g16),
                        "mm.log", std::nullopt);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("bus factor of 1.75"), std::string::npos)
      << mismatch.status().message();
}

TEST(NcclTestsLogTest, CollectiveNames) {
  EXPECT_EQ(ParseNcclTestsCollective("alltoall"), Collective::kAllToAll);
  EXPECT_EQ(ParseNcclTestsCollective("all_to_all"), Collective::kAllToAll);
  EXPECT_EQ(ParseNcclTestsCollective("sendrecv_perf"), Collective::kSend);
  EXPECT_EQ(ParseNcclTestsCollective("all_reduce"), Collective::kAllReduce);
  EXPECT_EQ(ParseNcclTestsCollective("reduce"), std::nullopt);
  EXPECT_EQ(NcclTestsName(Collective::kAllToAll), "alltoall");
}

}  // namespace
}  // namespace shardscope::calibrate
