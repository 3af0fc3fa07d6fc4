// LocalCommunicator: the Communicator of a one-rank world, in process and
// without MPI — the single-rank reference runs and unit tests use it. Every
// group has one member, so collectives copy or do nothing; point-to-point
// calls fail (a one-rank plan has none). Not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_
#define SHARDSCOPE_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_

#include "runtime/comm/communicator.h"

namespace shardscope::runtime {

class LocalCommunicator final : public Communicator {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  Status AddGroups(const Placement& placement) override;
  StatusOr<std::vector<int64_t>> ExchangeCounts(int64_t group, const std::vector<int64_t>& send,
                                                int64_t per_member = 1) override;
  Status Barrier() override { return Status::Ok(); }
  StatusOr<std::vector<std::string>> GatherToRoot(const std::string& bytes) override {
    return std::vector<std::string>{bytes};
  }
  [[noreturn]] void Abort(const std::string& message) override;

 protected:
  StatusOr<Request> PostAllReduce(int64_t group, void* data, int64_t count, DType dtype,
                                  CommStream stream) override;
  StatusOr<Request> PostAllGather(int64_t group, const void* send, void* recv, int64_t count,
                                  DType dtype, CommStream stream) override;
  StatusOr<Request> PostReduceScatter(int64_t group, const void* send, void* recv, int64_t count,
                                      DType dtype, CommStream stream) override;
  StatusOr<Request> PostAllToAllV(int64_t group, const void* send,
                                  const std::vector<int64_t>& send_counts, void* recv,
                                  const std::vector<int64_t>& recv_counts, DType dtype,
                                  CommStream stream) override;
  StatusOr<Request> PostBroadcast(int64_t group, void* data, int64_t count, DType dtype,
                                  int64_t root, CommStream stream) override;
  StatusOr<Request> PostSend(int64_t peer, const void* data, int64_t count, DType dtype, int tag,
                             CommStream stream) override;
  StatusOr<Request> PostRecv(int64_t peer, void* data, int64_t count, DType dtype, int tag,
                             CommStream stream) override;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_
