#include "calibrate/deepep_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace shardscope::calibrate {
namespace {

// The normal kernels' test on one node, as DeepEP's test_intranode.py prints it.
constexpr const char* kIntranode = R"([config] num_tokens=4096, hidden=7168, num_topk=8
[layout] Kernel performance: 0.052 ms

[testing] Running with BF16, without top-k (async=False, previous=False) ... passed

[tuning] SMs 24, NVL chunk 4: 120.50 GB/s (NVL), avg_t: 400.00 us
[tuning] SMs 24, NVL chunk default: 149.00 GB/s (NVL), avg_t: 301.00 us
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 20, 150.00 GB/s (NVL), t: 300.00 us

[tuning] Best dispatch (BF16): SMs 24, NVL chunk 16, 155.00 GB/s (NVL), t: 560.00 us

[tuning] SMs 24, NVL chunk 1: 100.00 GB/s (NVL), avg_t: 840.00 us
[tuning] Best combine: SMs 24, NVL chunk 6: 140.00 GB/s (NVL), t: 600.00 us
)";

// test_internode.py of the version that printed no times.
constexpr const char* kInternode =
    R"([config] num_tokens=4096, hidden=7168, num_topk_groups=2, num_topk=8
[tuning] SMs 24, NVL chunk 4, RDMA chunk 4: 30.10 GB/s (RDMA), 98.00 GB/s (NVL)
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 8, RDMA chunk 16: 40.00 GB/s (RDMA), 130.00 GB/s (NVL)

[tuning] Best dispatch (BF16): SMs 24, NVL chunk 8, RDMA chunk 16: 42.00 GB/s (RDMA), 137.00 GB/s (NVL)

[tuning] Best combine: SMs 24, NVL chunk 4, RDMA chunk 16: 41.00 GB/s (RDMA), 134.00 GB/s (NVL)
)";

TEST(DeepEpLogTest, ReadsTheNormalKernelsBestLines) {
  auto logs = ParseDeepEpLog(kIntranode, "intra.log");
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  ASSERT_EQ(logs->size(), 1u);
  const DeepEpLog& l = (*logs)[0];
  EXPECT_FALSE(l.low_latency);
  EXPECT_EQ(l.ranks, 0);  // the normal tests do not print it
  EXPECT_EQ(l.tokens, 4096);
  EXPECT_EQ(l.hidden, 7168);
  EXPECT_EQ(l.topk, 8);
  ASSERT_EQ(l.figures.size(), 3u);
  EXPECT_TRUE(l.figures[0].dispatch);
  EXPECT_TRUE(l.figures[0].fp8);
  EXPECT_DOUBLE_EQ(l.figures[0].nvl_bandwidth, 150e9);
  EXPECT_DOUBLE_EQ(l.figures[0].rdma_bandwidth, 0);
  EXPECT_NEAR(l.figures[0].seconds, 300e-6, 1e-12);
  EXPECT_EQ(l.figures[0].line, 8);
  EXPECT_FALSE(l.figures[1].fp8);
  EXPECT_FALSE(l.figures[2].dispatch);
  EXPECT_NEAR(l.figures[2].seconds, 600e-6, 1e-12);

  auto inter = ParseDeepEpLog(kInternode, "inter.log");
  ASSERT_TRUE(inter.ok()) << inter.status().message();
  const DeepEpLog& i = (*inter)[0];
  EXPECT_EQ(i.topk_groups, 2);
  ASSERT_EQ(i.figures.size(), 3u);
  EXPECT_DOUBLE_EQ(i.figures[0].rdma_bandwidth, 40e9);
  EXPECT_DOUBLE_EQ(i.figures[0].nvl_bandwidth, 130e9);
  EXPECT_EQ(i.figures[0].seconds, 0);  // not printed
}

TEST(DeepEpLogTest, ReadsTheLowLatencyRanks) {
  std::string log = "Allocating buffer size: 2115.111296 MB ...\n";
  for (int r = 0; r < 16; ++r) {
    log += fmt::format(
        "[rank {}] Dispatch bandwidth: {:.2f} GB/s, avg_t={:.2f} us | Combine bandwidth: {:.2f} "
        "GB/s, avg_t={:.2f} us\n",
        r, 40.0 + r * 0.1, 170.0 - r * 0.1, 41.0, 320.0);
    log += fmt::format(
        "[rank {}] Dispatch send/recv time: 28.10 + 8.50 us | Combine send/recv time: 30.00 + "
        "12.00 us\n",
        r);
  }
  auto logs = ParseDeepEpLog(log, "ll.log");
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  ASSERT_EQ(logs->size(), 1u);
  const DeepEpLog& l = (*logs)[0];
  EXPECT_TRUE(l.low_latency);
  EXPECT_EQ(l.ranks, 16);
  ASSERT_EQ(l.figures.size(), 32u);
  EXPECT_TRUE(l.figures[0].dispatch);
  EXPECT_DOUBLE_EQ(l.figures[0].nvl_bandwidth, 40e9);
  EXPECT_NEAR(l.figures[0].seconds, 170e-6, 1e-12);
  EXPECT_FALSE(l.figures[1].dispatch);
  EXPECT_NEAR(l.figures[1].seconds, 320e-6, 1e-12);
  EXPECT_EQ(l.figures[31].rank, 15);
}

TEST(DeepEpLogTest, ErrorsNameTheFileAndLine) {
  auto bad = ParseDeepEpLog("[config] num_tokens=1\n[tuning] Best combine: SMs 24, NVL chunk 6\n",
                            "b.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("b.log:2: a best tuning line with no"), std::string::npos)
      << bad.status().message();
  auto ll =
      ParseDeepEpLog("x\n[rank 0] Dispatch bandwidth: fast | Combine bandwidth: slow\n", "ll.log");
  ASSERT_FALSE(ll.ok());
  EXPECT_NE(ll.status().message().find("ll.log:2: a low-latency line"), std::string::npos)
      << ll.status().message();
  auto none = ParseDeepEpLog("nothing here\n", "none.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("none.log: no DeepEP figure"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::calibrate
