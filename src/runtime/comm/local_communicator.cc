#include "runtime/comm/local_communicator.h"

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "runtime/device/dtype_convert.h"

namespace shardscope::runtime {
namespace {

class DoneRequest final : public CommRequest {
 public:
  Status Wait() override { return Status::Ok(); }
  StatusOr<bool> Test() override { return true; }
};

Request Done() { return std::make_unique<DoneRequest>(); }

}  // namespace

Status LocalCommunicator::AddGroups(const Placement& placement) {
  if (placement.world_size() != 1) {
    return InvalidArgument("the local communicator runs one rank; the plan has {}",
                           placement.world_size());
  }
  return Status::Ok();
}

StatusOr<Request> LocalCommunicator::PostAllReduce(int64_t, void*, int64_t, DType dtype,
                                                   CommStream) {
  if (!IsStorageDType(dtype))
    return Unimplemented("not implemented: {} all-reduce", DTypeName(dtype));
  return Done();
}

StatusOr<Request> LocalCommunicator::PostAllGather(int64_t, const void* send, void* recv,
                                                   int64_t count, DType dtype, CommStream) {
  if (send != recv) std::memmove(recv, send, static_cast<size_t>(count * DTypeSize(dtype)));
  return Done();
}

StatusOr<Request> LocalCommunicator::PostReduceScatter(int64_t, const void* send, void* recv,
                                                       int64_t count, DType dtype, CommStream) {
  if (!IsStorageDType(dtype)) {
    return Unimplemented("not implemented: {} reduce-scatter", DTypeName(dtype));
  }
  std::memmove(recv, send, static_cast<size_t>(count * DTypeSize(dtype)));
  return Done();
}

StatusOr<std::vector<int64_t>> LocalCommunicator::ExchangeCounts(int64_t,
                                                                 const std::vector<int64_t>& send,
                                                                 int64_t) {
  return send;
}

StatusOr<Request> LocalCommunicator::PostAllToAllV(int64_t, const void* send,
                                                   const std::vector<int64_t>& send_counts,
                                                   void* recv, const std::vector<int64_t>&,
                                                   DType dtype, CommStream) {
  std::memmove(recv, send, static_cast<size_t>(send_counts.at(0) * DTypeSize(dtype)));
  return Done();
}

StatusOr<Request> LocalCommunicator::PostBroadcast(int64_t, void*, int64_t, DType, int64_t,
                                                   CommStream) {
  return Done();
}

StatusOr<Request> LocalCommunicator::PostSend(int64_t peer, const void*, int64_t, DType, int,
                                              CommStream) {
  return InternalError("one-rank world: no peer {} to send to", peer);
}

StatusOr<Request> LocalCommunicator::PostRecv(int64_t peer, void*, int64_t, DType, int,
                                              CommStream) {
  return InternalError("one-rank world: no peer {} to receive from", peer);
}

void LocalCommunicator::Abort(const std::string& message) {
  std::cerr << "shardscope: error: " << message << std::endl;
  std::abort();
}

}  // namespace shardscope::runtime
