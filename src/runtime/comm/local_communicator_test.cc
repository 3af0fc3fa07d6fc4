#include "runtime/comm/local_communicator.h"

#include <gtest/gtest.h>

#include <cstring>

namespace shardscope::runtime {
namespace {

// Counts are elements of the dtype: a one-rank all-gather copies count × its size.
TEST(LocalCommunicatorTest, AllGatherCopiesCountElementsOfTheDType) {
  LocalCommunicator comm;
  const int64_t send[3] = {int64_t{1} << 40, -2, 3};
  int64_t recv[4] = {0, 0, 0, 77};
  auto r = comm.AllGather(0, send, recv, 3, DType::kInt64, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE((*r)->Wait().ok());
  EXPECT_EQ(0, std::memcmp(send, recv, sizeof(send)));
  EXPECT_EQ(recv[3], 77);  // nothing past count elements

  const uint8_t bytes[5] = {1, 2, 3, 4, 5};
  uint8_t out[6] = {0, 0, 0, 0, 0, 9};
  ASSERT_TRUE(comm.AllGather(0, bytes, out, 5, DType::kUint8, {}).ok());
  EXPECT_EQ(0, std::memcmp(bytes, out, 5));
  EXPECT_EQ(out[5], 9);
}

TEST(LocalCommunicatorTest, AllToAllVMovesElementsOfTheDType) {
  LocalCommunicator comm;
  const int32_t send[2] = {7, 8};
  int32_t recv[3] = {0, 0, 5};
  auto r = comm.AllToAllV(0, send, {2}, recv, {2}, DType::kInt32, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(recv[0], 7);
  EXPECT_EQ(recv[1], 8);
  EXPECT_EQ(recv[2], 5);
}

// Sums take the floating-point storage dtypes only; point to point has no peer.
TEST(LocalCommunicatorTest, SumsRefuseIntegerTypesAndSendsFail) {
  LocalCommunicator comm;
  float f[2] = {1, 2};
  EXPECT_TRUE(comm.AllReduce(0, f, 2).ok());
  int64_t x[2] = {1, 2};
  EXPECT_EQ(comm.AllReduce(0, x, 2, DType::kInt64, {}).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(comm.ReduceScatter(0, x, x, 2, DType::kInt32, {}).status().code(),
            StatusCode::kUnimplemented);
  EXPECT_FALSE(comm.Send(1, x, 2, DType::kInt64, 0, {}).ok());
  EXPECT_FALSE(comm.Recv(1, x, 2, DType::kInt64, 0, {}).ok());
  int32_t ids[2] = {4, 5};
  EXPECT_TRUE(comm.Broadcast(0, ids, 2, DType::kInt32, 0, {}).ok());
  EXPECT_EQ(ids[1], 5);
}

}  // namespace
}  // namespace shardscope::runtime
