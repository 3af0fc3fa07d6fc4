#include "sim/network.h"

#include <gtest/gtest.h>

namespace shardscope::sim {
namespace {

// Runs the network until idle; returns tag → finish time.
std::map<int64_t, double> Drain(FlowNetwork& net) {
  std::map<int64_t, double> done;
  std::vector<int64_t> finished;
  while (net.active() > 0) {
    const double t = net.NextCompletion();
    finished.clear();
    net.AdvanceTo(t, &finished);
    for (int64_t tag : finished) done[tag] = t;
  }
  return done;
}

TEST(FlowNetworkTest, TwoTransfersSharingOneLinkEachGetHalf) {
  FlowNetwork net({100.0, 100.0, 100.0});
  net.Start(0, {{0, 100}, {1, 100}}, 1);
  net.Start(0, {{0, 100}, {2, 100}}, 2);
  EXPECT_DOUBLE_EQ(net.RateOf(1), 50);
  EXPECT_DOUBLE_EQ(net.RateOf(2), 50);
  auto done = Drain(net);
  EXPECT_DOUBLE_EQ(done[1], 2.0);
  EXPECT_DOUBLE_EQ(done[2], 2.0);
}

TEST(FlowNetworkTest, AloneAtFullRateAndSpeedsUpWhenTheOtherEnds) {
  FlowNetwork net({100.0});
  net.Start(0, {{0, 50}}, 1);
  net.Start(0, {{0, 150}}, 2);
  auto done = Drain(net);
  // Both at 50 until t = 1 (50 bytes of 1 delivered), then 2 alone: 100 left at 100 B/s.
  EXPECT_DOUBLE_EQ(done[1], 1.0);
  EXPECT_DOUBLE_EQ(done[2], 2.0);
}

TEST(FlowNetworkTest, MaxMinGivesLeftoverToTheUnconstrained) {
  // Link 0 (cap 10) shared by A and B; B also crosses link 1 (cap 2).
  FlowNetwork net({10.0, 2.0});
  net.Start(0, {{0, 100}}, 1);            // A
  net.Start(0, {{0, 100}, {1, 100}}, 2);  // B: limited to 2 by link 1
  EXPECT_DOUBLE_EQ(net.RateOf(2), 2);
  EXPECT_DOUBLE_EQ(net.RateOf(1), 8);
}

TEST(FlowNetworkTest, ProportionalLoadsFinishTogether) {
  // A coflow with 2:1 loads finishes when its bigger load is delivered.
  FlowNetwork net({10.0, 10.0});
  net.Start(0, {{0, 100}, {1, 50}}, 7);
  auto done = Drain(net);
  EXPECT_DOUBLE_EQ(done[7], 10.0);
}

TEST(FlowNetworkTest, LaterStartOnlyTouchesItsComponent) {
  FlowNetwork net({10.0, 10.0});
  net.Start(0, {{0, 100}}, 1);
  std::vector<int64_t> f;
  net.AdvanceTo(5, &f);
  net.Start(5, {{1, 10}}, 2);  // disjoint: 1 keeps its rate
  EXPECT_DOUBLE_EQ(net.RateOf(1), 10);
  auto done = Drain(net);
  EXPECT_DOUBLE_EQ(done[2], 6.0);
  EXPECT_DOUBLE_EQ(done[1], 10.0);
}

}  // namespace
}  // namespace shardscope::sim
