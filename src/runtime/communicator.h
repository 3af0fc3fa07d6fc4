// Communicator: the communication interface of the executor — collectives over
// the plan's groups and point-to-point transfers between global ranks, posted
// non-blocking and completed through a CommRequest. Implementations: mpi/ (CPU
// ranks); a NCCL one will follow for GPUs. One communicator per rank; not
// thread-safe. Buffers passed to a call must stay alive and untouched (sends:
// unmodified, receives: unread) until its request completes.
#ifndef SHARDSCOPE_RUNTIME_COMMUNICATOR_H_
#define SHARDSCOPE_RUNTIME_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;

  // Registers the groups of a placement (every dimension), so calls can name a
  // group by Group::id. Collective: every rank calls it with the same placement.
  virtual Status AddGroups(const Placement& placement) = 0;

  // Element-wise sum of `count` floats over the group, in place.
  virtual StatusOr<Request> AllReduce(int64_t group, float* data, int64_t count) = 0;
  // Each member contributes `bytes` bytes; recv gets them in member order (group size × bytes).
  virtual StatusOr<Request> AllGather(int64_t group, const void* send, int64_t bytes,
                                      void* recv) = 0;
  // Sums send (group size × count floats) and leaves member i's block i in recv (count floats).
  virtual StatusOr<Request> ReduceScatter(int64_t group, const float* send, float* recv,
                                          int64_t count) = 0;
  // Blocking exchange of counts: send holds `per_member` counts for each member
  // (member-major); returns the `per_member` counts each member sent here.
  virtual StatusOr<std::vector<int64_t>> ExchangeCounts(int64_t group,
                                                        const std::vector<int64_t>& send,
                                                        int64_t per_member = 1) = 0;
  // All-to-all-v of floats: send_counts[i] floats to member i (consecutive in send),
  // recv_counts[i] from member i (consecutive in recv).
  virtual StatusOr<Request> AllToAllV(int64_t group, const float* send,
                                      const std::vector<int64_t>& send_counts, float* recv,
                                      const std::vector<int64_t>& recv_counts) = 0;
  // `bytes` from the global rank `root` to every member.
  virtual StatusOr<Request> Broadcast(int64_t group, void* data, int64_t bytes, int64_t root) = 0;
  // Point-to-point with a global rank; the n-th send from a to b with a tag
  // matches the n-th recv at b from a with that tag.
  virtual StatusOr<Request> Send(int64_t peer, const void* data, int64_t bytes, int tag) = 0;
  virtual StatusOr<Request> Recv(int64_t peer, void* data, int64_t bytes, int tag) = 0;
  // Blocks until every rank of the world has reached it.
  virtual Status Barrier() = 0;
  // Gathers each rank's bytes on rank 0 (blocking): returns them by rank there, empty elsewhere.
  virtual StatusOr<std::vector<std::string>> GatherToRoot(const std::string& bytes) = 0;
  // Ends the whole job now, every rank, after printing `message` (a failing op).
  [[noreturn]] virtual void Abort(const std::string& message) = 0;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_COMMUNICATOR_H_
