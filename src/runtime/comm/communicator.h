// Communicator: the communication interface of the executor, in two planes: a
// control plane (rank and world, groups, count exchange, gather to root,
// barrier, abort) and a data plane (typed collectives over the plan's groups and
// point-to-point transfers between global ranks, on a stream), posted
// non-blocking and completed through a CommRequest. Implementations: mpi/ (CPU
// ranks); a NCCL one will follow for GPUs. One communicator per rank; not
// thread-safe. Buffers passed to a call must stay alive and untouched (sends:
// unmodified, receives: unread) until its request completes.
#ifndef SHARDSCOPE_RUNTIME_COMM_COMMUNICATOR_H_
#define SHARDSCOPE_RUNTIME_COMM_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "plan/placement.h"

namespace shardscope::runtime {

// An operation in flight. Destroying an unfinished request waits for it, so a
// buffer is never freed under a transfer.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  // Blocks until done.
  virtual Status Wait() = 0;
  // Drives progress; true once done (further calls stay true).
  virtual StatusOr<bool> Test() = 0;
};

using Request = std::unique_ptr<CommRequest>;

// The ordered queue a data-plane call is issued on: a CUDA stream for a NCCL
// communicator. Host communicators (MPI, local) run calls in issue order and
// ignore it; the default is the communicator's own queue.
struct CommStream {
  void* native = nullptr;
};

// The control plane: who is in the job and how the ranks coordinate outside
// the data path — MPI's bootstrap (a NCCL communicator is set up through it).
// Calls are blocking.
class ControlPlane {
 public:
  virtual ~ControlPlane() = default;

  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;

  // Registers the groups of a placement (every dimension), so calls can name a
  // group by Group::id. Collective: every rank calls it with the same placement.
  virtual Status AddGroups(const Placement& placement) = 0;
  // Exchange of counts: send holds `per_member` counts for each member
  // (member-major); returns the `per_member` counts each member sent here.
  virtual StatusOr<std::vector<int64_t>> ExchangeCounts(int64_t group,
                                                        const std::vector<int64_t>& send,
                                                        int64_t per_member = 1) = 0;
  // Blocks until every rank of the world has reached it.
  virtual Status Barrier() = 0;
  // Gathers each rank's bytes on rank 0: returns them by rank there, empty elsewhere.
  virtual StatusOr<std::vector<std::string>> GatherToRoot(const std::string& bytes) = 0;
  // Ends the whole job now, every rank, after printing `message` (a failing op).
  [[noreturn]] virtual void Abort(const std::string& message) = 0;
};

// The data plane: collectives over the plan's groups and point-to-point
// transfers, posted non-blocking on a stream. Every call takes an element count
// and its DType, as NCCL's calls do (ncclSend(buf, count, datatype, …)): fp32,
// bf16 or fp16 tensors, int32 / int64 ids and clock readings, uint8 for opaque
// bytes (a packed struct). Reductions (AllReduce, ReduceScatter) sum, so they
// take fp32, bf16 or fp16 only and fail Unimplemented on other dtypes; the
// others move any dtype. The fp32 overloads without a dtype are shorthands
// (tests); the executor passes its tensors' dtype. The public calls are not
// virtual: implementations override the protected Post… calls, so every
// overload stays callable on a concrete communicator.
class DataPlane {
 public:
  virtual ~DataPlane() = default;

  // Element-wise sum of `count` elements over the group, in place.
  StatusOr<Request> AllReduce(int64_t group, void* data, int64_t count, DType dtype,
                              CommStream stream) {
    return PostAllReduce(group, data, count, dtype, stream);
  }
  // Each member contributes `count` elements; recv gets them in member order
  // (group size × count elements).
  StatusOr<Request> AllGather(int64_t group, const void* send, void* recv, int64_t count,
                              DType dtype, CommStream stream) {
    return PostAllGather(group, send, recv, count, dtype, stream);
  }
  // Sums send (group size × count elements) and leaves member i's block i in recv.
  StatusOr<Request> ReduceScatter(int64_t group, const void* send, void* recv, int64_t count,
                                  DType dtype, CommStream stream) {
    return PostReduceScatter(group, send, recv, count, dtype, stream);
  }
  // All-to-all-v: send_counts[i] elements to member i (consecutive in send),
  // recv_counts[i] from member i (consecutive in recv).
  StatusOr<Request> AllToAllV(int64_t group, const void* send,
                              const std::vector<int64_t>& send_counts, void* recv,
                              const std::vector<int64_t>& recv_counts, DType dtype,
                              CommStream stream) {
    return PostAllToAllV(group, send, send_counts, recv, recv_counts, dtype, stream);
  }
  // `count` elements from the global rank `root` to every member, in place.
  StatusOr<Request> Broadcast(int64_t group, void* data, int64_t count, DType dtype, int64_t root,
                              CommStream stream) {
    return PostBroadcast(group, data, count, dtype, root, stream);
  }
  // Point-to-point with a global rank, `count` elements; the n-th send from a
  // to b with a tag matches the n-th recv at b from a with that tag, and both
  // name the same count and dtype.
  StatusOr<Request> Send(int64_t peer, const void* data, int64_t count, DType dtype, int tag,
                         CommStream stream) {
    return PostSend(peer, data, count, dtype, tag, stream);
  }
  StatusOr<Request> Recv(int64_t peer, void* data, int64_t count, DType dtype, int tag,
                         CommStream stream) {
    return PostRecv(peer, data, count, dtype, tag, stream);
  }

  // fp32 on the default stream.
  StatusOr<Request> AllReduce(int64_t group, float* data, int64_t count) {
    return AllReduce(group, data, count, DType::kFp32, {});
  }
  StatusOr<Request> AllGather(int64_t group, const float* send, float* recv, int64_t count) {
    return AllGather(group, send, recv, count, DType::kFp32, {});
  }
  StatusOr<Request> ReduceScatter(int64_t group, const float* send, float* recv, int64_t count) {
    return ReduceScatter(group, send, recv, count, DType::kFp32, {});
  }
  StatusOr<Request> AllToAllV(int64_t group, const float* send,
                              const std::vector<int64_t>& send_counts, float* recv,
                              const std::vector<int64_t>& recv_counts) {
    return AllToAllV(group, send, send_counts, recv, recv_counts, DType::kFp32, {});
  }
  StatusOr<Request> Broadcast(int64_t group, float* data, int64_t count, int64_t root) {
    return Broadcast(group, data, count, DType::kFp32, root, {});
  }
  StatusOr<Request> Send(int64_t peer, const float* data, int64_t count, int tag) {
    return Send(peer, data, count, DType::kFp32, tag, {});
  }
  StatusOr<Request> Recv(int64_t peer, float* data, int64_t count, int tag) {
    return Recv(peer, data, count, DType::kFp32, tag, {});
  }

 protected:
  // What implementations define: the calls above, posted on `stream`.
  virtual StatusOr<Request> PostAllReduce(int64_t group, void* data, int64_t count, DType dtype,
                                          CommStream stream) = 0;
  virtual StatusOr<Request> PostAllGather(int64_t group, const void* send, void* recv,
                                          int64_t count, DType dtype, CommStream stream) = 0;
  virtual StatusOr<Request> PostReduceScatter(int64_t group, const void* send, void* recv,
                                              int64_t count, DType dtype, CommStream stream) = 0;
  virtual StatusOr<Request> PostAllToAllV(int64_t group, const void* send,
                                          const std::vector<int64_t>& send_counts, void* recv,
                                          const std::vector<int64_t>& recv_counts, DType dtype,
                                          CommStream stream) = 0;
  virtual StatusOr<Request> PostBroadcast(int64_t group, void* data, int64_t count, DType dtype,
                                          int64_t root, CommStream stream) = 0;
  virtual StatusOr<Request> PostSend(int64_t peer, const void* data, int64_t count, DType dtype,
                                     int tag, CommStream stream) = 0;
  virtual StatusOr<Request> PostRecv(int64_t peer, void* data, int64_t count, DType dtype, int tag,
                                     CommStream stream) = 0;
};

// A rank's communicator: both planes.
class Communicator : public ControlPlane, public DataPlane {};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_COMM_COMMUNICATOR_H_
