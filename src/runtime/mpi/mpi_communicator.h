// MpiCommunicator: the Communicator over MPI (OpenMPI), with one MPI
// communicator per plan group, created by MPI_Comm_split per dimension.
// Errors come back as Status (MPI_ERRORS_RETURN). Data-plane calls hand MPI the
// caller's count in the MPI type of its dtype (MPI_FLOAT, MPI_INT32_T,
// MPI_INT64_T, …; bf16 / fp16 as MPI_UINT16_T, uint8 as MPI_BYTE), never a
// byte count; sums of bf16 / fp16 go through a user MPI_Op in fp32. Owns its MPI
// handles; not copyable; not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_MPI_MPI_COMMUNICATOR_H_
#define SHARDSCOPE_RUNTIME_MPI_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <map>
#include <memory>
#include <utility>

#include "runtime/comm/communicator.h"

namespace shardscope::runtime {

// MPI_Init / MPI_Finalize for a process's lifetime (the worker, the MPI tests).
class MpiSession {
 public:
  // Initialises MPI unless it already is; fails when MPI cannot start.
  static StatusOr<std::unique_ptr<MpiSession>> Init(int* argc, char*** argv);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession();

 private:
  explicit MpiSession(bool owns) : owns_(owns) {}
  bool owns_ = false;
};

// True when this process was started by mpirun (OpenMPI's environment is set).
bool UnderMpirun();

// An owned MPI_Comm (freed on destruction unless it is a predefined one).
class MpiComm {
 public:
  explicit MpiComm(MPI_Comm comm = MPI_COMM_NULL) : comm_(comm) {}
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept {
    std::swap(comm_, o.comm_);
    return *this;
  }
  ~MpiComm();
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_;
};

class MpiCommunicator final : public Communicator {
 public:
  // A communicator over `base` (duplicated; MPI_COMM_WORLD or a sub-communicator
  // whose ranks are the plan's global ranks 0..n−1).
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create(MPI_Comm base = MPI_COMM_WORLD);

  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return size_; }
  Status AddGroups(const Placement& placement) override;
  StatusOr<std::vector<int64_t>> ExchangeCounts(int64_t group, const std::vector<int64_t>& send,
                                                int64_t per_member = 1) override;
  Status Barrier() override;
  StatusOr<std::vector<std::string>> GatherToRoot(const std::string& bytes) override;
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

 private:
  struct GroupComm {
    MpiComm comm;
    std::vector<int64_t> ranks;  // global ranks by position
  };
  MpiCommunicator() = default;
  StatusOr<const GroupComm*> Find(int64_t group) const;

  MpiComm world_;
  int64_t rank_ = 0, size_ = 1;
  std::map<int64_t, std::unique_ptr<GroupComm>> groups_;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_MPI_MPI_COMMUNICATOR_H_
