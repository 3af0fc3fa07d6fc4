#include "serve/kv_transfers.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardscope::serve {
namespace {

// Runs every event and returns each request's arrival time.
std::vector<double> Drain(KvTransfers& net, size_t requests) {
  std::vector<double> arrival(requests, -1);
  std::vector<int64_t> arrived;
  while (!net.idle()) {
    const double t = net.Next();
    arrived.clear();
    net.AdvanceTo(t, &arrived);
    for (int64_t id : arrived) arrival[static_cast<size_t>(id)] = t;
  }
  return arrival;
}

TEST(KvTransfersTest, OneCacheTakesItsBytesOverTheSlowerSideThenTheLatency) {
  // Instances 0 (prefill, 400 B/s) and 1 (decode, 100 B/s).
  KvTransfers net({400, 100}, 0.5);
  net.Start(2.0, 0, 1, 1000, 0);
  EXPECT_DOUBLE_EQ(Drain(net, 1)[0], 2.0 + 1000.0 / 100 + 0.5);
}

TEST(KvTransfersTest, CachesIntoOneDecodeInstanceShareItsNics) {
  // Two prefill instances (0, 1) send to decode instance 2 at once: each gets
  // half of its 100 B/s, so both arrive together (FIFO would deliver one at
  // 10 s and the other at 20 s).
  KvTransfers net({1000, 1000, 100}, 0);
  net.Start(0, 0, 2, 1000, 0);
  net.Start(0, 1, 2, 1000, 1);
  const std::vector<double> t = Drain(net, 2);
  EXPECT_DOUBLE_EQ(t[0], 20.0);
  EXPECT_DOUBLE_EQ(t[1], 20.0);
}

TEST(KvTransfersTest, MaxMinFairOverAPrefillInstancesNics) {
  // Prefill 0 (100 B/s) sends 300 B to decode 1 (30 B/s) and 700 B to decode 2
  // (1000 B/s). Max-min: the first is held to 30 B/s by its destination, the
  // second gets the other 70 B/s; both finish at 10 s.
  KvTransfers net({100, 30, 1000}, 0);
  net.Start(0, 0, 1, 300, 0);
  net.Start(0, 0, 2, 700, 1);
  const std::vector<double> t = Drain(net, 2);
  EXPECT_NEAR(t[0], 10.0, 1e-9);
  EXPECT_NEAR(t[1], 10.0, 1e-9);
}

TEST(KvTransfersTest, ALaterCacheSlowsTheOneInFlight) {
  // 1000 B at 100 B/s alone for 4 s (600 B left), then shared with a second
  // cache of 200 B at 50 B/s each: the second finishes at 8 s, the first then
  // has 400 B left at 100 B/s: 12 s. Latency 1 s after each.
  KvTransfers net({1000, 1000, 100}, 1);
  net.Start(0, 0, 2, 1000, 0);
  std::vector<int64_t> arrived;
  net.AdvanceTo(4, &arrived);
  EXPECT_TRUE(arrived.empty());
  net.Start(4, 1, 2, 200, 1);
  const std::vector<double> t = Drain(net, 2);
  EXPECT_NEAR(t[1], 9.0, 1e-9);
  EXPECT_NEAR(t[0], 13.0, 1e-9);
}

TEST(KvTransfersTest, AnEmptyCacheTakesOnlyTheLatency) {
  KvTransfers net({100, 100}, 0.25);
  net.Start(3, 0, 1, 0, 0);
  EXPECT_DOUBLE_EQ(Drain(net, 1)[0], 3.25);
}

}  // namespace
}  // namespace shardscope::serve
