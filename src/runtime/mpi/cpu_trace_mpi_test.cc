// Clock-offset estimation between real processes (run with 2 and 4 ranks). All
// ranks of this test share one host and its steady clock, so the true offset is
// 0: each estimate must lie within half its round trip of 0 (the estimator's
// exact error bound), and be small.
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/cpu_trace.h"
#include "runtime/mpi/mpi_communicator.h"

namespace shardscope::runtime {
namespace {

TEST(ClockOffsetMpiTest, OffsetsOnOneHostAreZeroWithinHalfTheRoundTrip) {
  auto comm = MpiCommunicator::Create();
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  auto clock = EstimateClockOffset(**comm, 16);
  ASSERT_TRUE(clock.ok()) << clock.status().message();
  if ((*comm)->rank() == 0) {
    EXPECT_EQ(clock->offset_ns, 0);
    EXPECT_EQ(clock->round_trip_ns, 0);
    return;
  }
  EXPECT_GT(clock->round_trip_ns, 0);
  EXPECT_LE(std::llabs(clock->offset_ns), clock->round_trip_ns / 2 + 1);
  // "~0": well below a millisecond-scale trace event; loose for a loaded, oversubscribed host.
  EXPECT_LT(std::llabs(clock->offset_ns), 5'000'000);
}

}  // namespace
}  // namespace shardscope::runtime
