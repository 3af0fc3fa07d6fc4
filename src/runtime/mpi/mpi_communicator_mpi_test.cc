// The MPI communicator between real processes (run with 2 and 4 ranks).
#include <gtest/gtest.h>

#include <cstring>

#include "plan/placement.h"
#include "plan/test_experiments.h"
#include "runtime/device/dtype_convert.h"
#include "runtime/mpi/mpi_communicator.h"

namespace shardscope::runtime {
namespace {

// A tp = world plan, so the tp group is every rank.
class MpiCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = MpiCommunicator::Create();
    ASSERT_TRUE(c.ok()) << c.status().message();
    comm_ = std::move(*c);
    n_ = comm_->world_size();
    me_ = comm_->rank();
    ParallelSpec p;
    p.tp = n_;
    auto e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 4, 8);
    auto pl = Placement::Create(e);
    ASSERT_TRUE(pl.ok()) << pl.status().message();
    placement_ = std::make_unique<Placement>(*pl);
    ASSERT_TRUE(comm_->AddGroups(*placement_).ok());
    group_ = placement_->GroupOf(me_, Dim::kTp).id;
  }

  std::unique_ptr<MpiCommunicator> comm_;
  std::unique_ptr<Placement> placement_;
  int64_t n_ = 1, me_ = 0, group_ = 0;
};

TEST_F(MpiCommunicatorTest, AllReduceSums) {
  std::vector<float> v = {static_cast<float>(me_), 1.0f, static_cast<float>(me_ * me_)};
  auto r = comm_->AllReduce(group_, v.data(), 3);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Wait().ok());
  EXPECT_EQ(v[0], n_ * (n_ - 1) / 2);
  EXPECT_EQ(v[1], n_);
  EXPECT_EQ(v[2], (n_ - 1) * n_ * (2 * n_ - 1) / 6);
}

// The typed data plane: 16-bit floats sum in fp32 and round back; all-to-all-v
// moves elements of the dtype.
TEST_F(MpiCommunicatorTest, TypedAllReduceAndAllToAllV) {
  for (DType dtype : {DType::kBf16, DType::kFp16}) {
    const std::vector<float> v = {static_cast<float>(me_) + 0.5f, -1.0f};
    std::vector<uint16_t> h(2);
    ASSERT_TRUE(FromFloat(v.data(), 2, dtype, h.data()).ok());
    auto r = comm_->AllReduce(group_, h.data(), 2, dtype, CommStream{});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE((*r)->Wait().ok());
    std::vector<float> sum(2);
    ASSERT_TRUE(ToFloat(dtype, h.data(), 2, sum.data()).ok());
    EXPECT_EQ(sum[0], n_ * (n_ - 1) / 2 + 0.5f * n_) << DTypeName(dtype);
    EXPECT_EQ(sum[1], -static_cast<float>(n_)) << DTypeName(dtype);
  }
  // One bf16 element to every member: member j receives j + (sender) from each.
  std::vector<uint16_t> send(n_), recv(n_);
  for (int64_t j = 0; j < n_; ++j) send[j] = FloatToBf16(static_cast<float>(10 * me_ + j));
  const std::vector<int64_t> ones(n_, 1);
  auto a = comm_->AllToAllV(group_, send.data(), ones, recv.data(), ones, DType::kBf16, {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE((*a)->Wait().ok());
  for (int64_t j = 0; j < n_; ++j) EXPECT_EQ(Bf16ToFloat(recv[j]), 10 * j + me_);
  int8_t x = 0;
  EXPECT_EQ(comm_->AllReduce(group_, &x, 1, DType::kInt8, {}).status().code(),
            StatusCode::kUnimplemented);
}

TEST_F(MpiCommunicatorTest, AllGatherAndReduceScatter) {
  const int32_t mine[2] = {static_cast<int32_t>(me_), static_cast<int32_t>(10 * me_)};
  std::vector<int32_t> all(2 * n_);
  auto r = comm_->AllGather(group_, mine, all.data(), 2, DType::kInt32, {});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Wait().ok());
  for (int64_t i = 0; i < n_; ++i) {
    EXPECT_EQ(all[2 * i], i);
    EXPECT_EQ(all[2 * i + 1], 10 * i);
  }
  std::vector<float> send(2 * n_), recv(2);
  for (int64_t i = 0; i < 2 * n_; ++i) send[i] = static_cast<float>(i + me_);
  auto rs = comm_->ReduceScatter(group_, send.data(), recv.data(), 2);
  ASSERT_TRUE(rs.ok());
  ASSERT_TRUE((*rs)->Wait().ok());
  // Block me_ summed over ranks: Σ_r (2·me_ + r) and Σ_r (2·me_ + 1 + r).
  EXPECT_EQ(recv[0], n_ * 2 * me_ + n_ * (n_ - 1) / 2);
  EXPECT_EQ(recv[1], n_ * (2 * me_ + 1) + n_ * (n_ - 1) / 2);
}

TEST_F(MpiCommunicatorTest, AllToAllVWithCountExchange) {
  // Rank r sends (r + i + 1) floats of value 100·r + i to member i.
  std::vector<int64_t> send_counts(n_);
  std::vector<float> send;
  for (int64_t i = 0; i < n_; ++i) {
    send_counts[i] = me_ + i + 1;
    for (int64_t c = 0; c < send_counts[i]; ++c) send.push_back(static_cast<float>(100 * me_ + i));
  }
  auto recv_counts = comm_->ExchangeCounts(group_, send_counts);
  ASSERT_TRUE(recv_counts.ok());
  int64_t total = 0;
  for (int64_t i = 0; i < n_; ++i) {
    EXPECT_EQ((*recv_counts)[i], i + me_ + 1);
    total += (*recv_counts)[i];
  }
  std::vector<float> recv(total);
  auto r = comm_->AllToAllV(group_, send.data(), send_counts, recv.data(), *recv_counts);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Wait().ok());
  int64_t at = 0;
  for (int64_t i = 0; i < n_; ++i) {
    for (int64_t c = 0; c < (*recv_counts)[i]; ++c) EXPECT_EQ(recv[at++], 100 * i + me_);
  }
}

TEST_F(MpiCommunicatorTest, BroadcastFromTheLastRank) {
  int32_t ids[3] = {0, 0, 0};
  if (me_ == n_ - 1) ids[0] = 7, ids[1] = 8, ids[2] = 9;
  auto r = comm_->Broadcast(group_, ids, 3, DType::kInt32, n_ - 1, {});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Wait().ok());
  EXPECT_EQ(ids[2], 9);
}

TEST_F(MpiCommunicatorTest, NonBlockingRingSendRecvInOrder) {
  // Two messages around the ring with the same tag arrive in posting order.
  const int64_t next = (me_ + 1) % n_, prev = (me_ + n_ - 1) % n_;
  float out[2][4], in[2][4];
  std::vector<Request> reqs;
  for (int m = 0; m < 2; ++m) {
    for (int i = 0; i < 4; ++i) out[m][i] = static_cast<float>(1000 * m + 10 * me_ + i);
    auto rr = comm_->Recv(prev, in[m], 4, 5);
    auto sr = comm_->Send(next, out[m], 4, 5);
    ASSERT_TRUE(rr.ok() && sr.ok());
    reqs.push_back(std::move(*rr));
    reqs.push_back(std::move(*sr));
  }
  for (auto& r : reqs) ASSERT_TRUE(r->Wait().ok());
  EXPECT_EQ(in[0][3], 10 * prev + 3);
  EXPECT_EQ(in[1][0], 1000 + 10 * prev);
  auto done = reqs[0]->Test();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
}

// Counts are elements of the dtype: int64 clock readings point to point, packed
// structs as uint8 bytes, int32 ids; sums refuse the integer and byte types.
TEST_F(MpiCommunicatorTest, CountsAreElementsOfTheDType) {
  const int64_t next = (me_ + 1) % n_, prev = (me_ + n_ - 1) % n_;
  const int64_t out[2] = {(int64_t{1} << 40) + me_, -me_};
  int64_t in[2] = {0, 0};
  auto rr = comm_->Recv(prev, in, 2, DType::kInt64, 9, {});
  auto sr = comm_->Send(next, out, 2, DType::kInt64, 9, {});
  ASSERT_TRUE(rr.ok() && sr.ok());
  ASSERT_TRUE((*rr)->Wait().ok());
  ASSERT_TRUE((*sr)->Wait().ok());
  EXPECT_EQ(in[0], (int64_t{1} << 40) + prev);
  EXPECT_EQ(in[1], -prev);

  struct Pair {
    float value;
    int32_t index;
  };
  const Pair mine = {0.5f * static_cast<float>(me_), static_cast<int32_t>(100 + me_)};
  std::vector<Pair> all(static_cast<size_t>(n_));
  auto g = comm_->AllGather(group_, &mine, all.data(), sizeof(Pair), DType::kUint8, {});
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE((*g)->Wait().ok());
  for (int64_t i = 0; i < n_; ++i) {
    EXPECT_EQ(all[i].value, 0.5f * static_cast<float>(i));
    EXPECT_EQ(all[i].index, 100 + i);
  }

  int64_t x = 1;
  EXPECT_EQ(comm_->AllReduce(group_, &x, 1, DType::kInt64, {}).status().code(),
            StatusCode::kUnimplemented);
  uint8_t b[4] = {};
  EXPECT_EQ(comm_->ReduceScatter(group_, b, b, 1, DType::kUint8, {}).status().code(),
            StatusCode::kUnimplemented);
}

TEST_F(MpiCommunicatorTest, BarrierAndGatherToRoot) {
  ASSERT_TRUE(comm_->Barrier().ok());
  auto all = comm_->GatherToRoot(std::string(static_cast<size_t>(me_ + 1), 'a' + me_));
  ASSERT_TRUE(all.ok());
  if (me_ == 0) {
    ASSERT_EQ(all->size(), static_cast<size_t>(n_));
    EXPECT_EQ((*all)[n_ - 1], std::string(n_, 'a' + n_ - 1));
  } else {
    EXPECT_TRUE(all->empty());
  }
}

TEST_F(MpiCommunicatorTest, UnknownGroupIsAnError) {
  float x = 0;
  EXPECT_FALSE(comm_->AllReduce(987654, &x, 1).ok());
}

}  // namespace
}  // namespace shardscope::runtime
