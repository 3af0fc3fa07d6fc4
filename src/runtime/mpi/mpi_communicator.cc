#include "runtime/mpi/mpi_communicator.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <thread>

#include "runtime/device/dtype_convert.h"

namespace shardscope::runtime {
namespace {

Status MpiStatus(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return InternalError("MPI {} failed: {}", what, std::string(text, static_cast<size_t>(len)));
}

#define MPI_CHECK(call, what) RETURN_IF_ERROR(MpiStatus((call), what))

// A spin-wait hint: lets a hardware thread sharing the core run meanwhile.
inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One MPI request; keeps the count arrays of a v-collective alive until it completes.
class MpiRequest final : public CommRequest {
 public:
  MpiRequest() = default;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;
  ~MpiRequest() override {
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }
  // MPI_Wait polls flat out. A rank that waits long (a pipeline stage, for
  // the other stage's whole forward pass) would then take the shared parts of
  // the host (a sibling hardware thread's core, the memory path) from the rank
  // that works, and slow it down (docs/history/fidelity-series.md, PP2). So: poll with pauses
  // for kSpin, which covers a collective's usual wait, then nap between polls.
  Status Wait() override {
    using Clock = std::chrono::steady_clock;
    constexpr auto kSpin = std::chrono::microseconds(500);
    constexpr auto kNap = std::chrono::microseconds(20);
    if (req_ == MPI_REQUEST_NULL) return Status::Ok();
    const Clock::time_point start = Clock::now();
    for (;;) {
      int done = 0;
      RETURN_IF_ERROR(MpiStatus(MPI_Test(&req_, &done, MPI_STATUS_IGNORE), "test"));
      if (done != 0) return Status::Ok();
      if (Clock::now() - start < kSpin) {
        for (int i = 0; i < 32; ++i) CpuPause();
      } else {
        std::this_thread::sleep_for(kNap);
      }
    }
  }
  StatusOr<bool> Test() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    RETURN_IF_ERROR(MpiStatus(MPI_Test(&req_, &done, MPI_STATUS_IGNORE), "test"));
    return done != 0;
  }
  MPI_Request* get() { return &req_; }
  std::vector<int> counts[4];  // alltoallv: send counts, send displs, recv counts, recv displs

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
};

StatusOr<int> ToInt(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return InvalidArgument("MPI {} count {} is out of int range", what, v);
  }
  return static_cast<int>(v);
}

// Sums of 16-bit floats, in fp32 and rounded back (MPI has no bf16 / fp16 type).
template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void SumHalves(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FromF(ToF(a[i]) + ToF(b[i]));
}

// The MPI element type of a dtype: every call moves typed elements (no byte
// counts), so MPI sees the count the caller gave. 16-bit floats and fp8 move as
// unsigned integers of their width; uint8 (opaque bytes) as MPI_BYTE.
MPI_Datatype MpiTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
    case DType::kTf32:  // stored as fp32
      return MPI_FLOAT;
    case DType::kBf16:
    case DType::kFp16:
      return MPI_UINT16_T;
    case DType::kFp8:
      return MPI_UINT8_T;
    case DType::kInt8:
      return MPI_INT8_T;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kUint8:
      return MPI_BYTE;
  }
  return MPI_DATATYPE_NULL;
}

// The MPI element type and sum of a reducible dtype (ops created once per process).
struct MpiSum {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
};

StatusOr<MpiSum> SumOf(DType dtype, const char* what) {
  switch (dtype) {
    case DType::kFp32:
      return MpiSum{MPI_FLOAT, MPI_SUM};
    case DType::kBf16: {
      static MPI_Op op = [] {
        MPI_Op o = MPI_OP_NULL;
        MPI_Op_create(&SumHalves<Bf16ToFloat, FloatToBf16>, /*commute=*/1, &o);
        return o;
      }();
      return MpiSum{MPI_UINT16_T, op};
    }
    case DType::kFp16: {
      static MPI_Op op = [] {
        MPI_Op o = MPI_OP_NULL;
        MPI_Op_create(&SumHalves<F16ToFloat, FloatToF16>, /*commute=*/1, &o);
        return o;
      }();
      return MpiSum{MPI_UINT16_T, op};
    }
    case DType::kTf32:
    case DType::kFp8:
    case DType::kInt8:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
      break;
  }
  return Unimplemented("not implemented: MPI {} of {}", what, DTypeName(dtype));
}

}  // namespace

bool UnderMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_RANK") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Init(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return std::unique_ptr<MpiSession>(new MpiSession(false));
  int provided = 0;
  MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "init");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiSession>(new MpiSession(true));
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF && !finalized) {
    MPI_Comm_free(&comm_);
  }
}

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MPI_Comm base) {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(base, &dup), "comm_dup");
  c->world_ = MpiComm(dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &size);
  c->rank_ = rank, c->size_ = size;
  return c;
}

Status MpiCommunicator::AddGroups(const Placement& placement) {
  if (placement.world_size() != size_) {
    return InvalidArgument("the plan has {} ranks but MPI started {}", placement.world_size(),
                           size_);
  }
  for (int d = 0; d < kNumDims; ++d) {
    const Group& mine = placement.GroupOf(rank_, static_cast<Dim>(d));
    if (groups_.count(mine.id)) continue;
    int64_t position = 0;
    for (size_t i = 0; i < mine.ranks.size(); ++i) {
      if (mine.ranks[i] == rank_) position = static_cast<int64_t>(i);
    }
    // Every rank splits once per dimension, colouring by its group id.
    MPI_Comm split = MPI_COMM_NULL;
    MPI_CHECK(
        MPI_Comm_split(world_.get(), static_cast<int>(mine.id), static_cast<int>(position), &split),
        "comm_split");
    MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
    auto g = std::make_unique<GroupComm>(GroupComm{MpiComm(split), mine.ranks});
    groups_[mine.id] = std::move(g);
  }
  return Status::Ok();
}

StatusOr<const MpiCommunicator::GroupComm*> MpiCommunicator::Find(int64_t group) const {
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    return InternalError("rank {} is not a member of group {} (AddGroups first)", rank_, group);
  }
  return it->second.get();
}

StatusOr<Request> MpiCommunicator::PostAllReduce(int64_t group, void* data, int64_t count,
                                                 DType dtype, CommStream) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  ASSIGN_OR_RETURN(int n, ToInt(count, "all-reduce"));
  ASSIGN_OR_RETURN(MpiSum sum, SumOf(dtype, "all-reduce"));
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, n, sum.type, sum.op, g->comm.get(), r->get()),
            "all-reduce");
  return Request(std::move(r));
}

StatusOr<Request> MpiCommunicator::PostAllGather(int64_t group, const void* send, void* recv,
                                                 int64_t count, DType dtype, CommStream) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  ASSIGN_OR_RETURN(int n, ToInt(count, "all-gather"));
  const MPI_Datatype type = MpiTypeOf(dtype);
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(MPI_Iallgather(send, n, type, recv, n, type, g->comm.get(), r->get()), "all-gather");
  return Request(std::move(r));
}

StatusOr<Request> MpiCommunicator::PostReduceScatter(int64_t group, const void* send, void* recv,
                                                     int64_t count, DType dtype, CommStream) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  ASSIGN_OR_RETURN(int n, ToInt(count, "reduce-scatter"));
  ASSIGN_OR_RETURN(MpiSum sum, SumOf(dtype, "reduce-scatter"));
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, n, sum.type, sum.op, g->comm.get(), r->get()),
            "reduce-scatter");
  return Request(std::move(r));
}

StatusOr<std::vector<int64_t>> MpiCommunicator::ExchangeCounts(int64_t group,
                                                               const std::vector<int64_t>& send,
                                                               int64_t per_member) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  if (static_cast<int64_t>(send.size()) != static_cast<int64_t>(g->ranks.size()) * per_member) {
    return InternalError("count exchange: {} counts for a group of {} × {}", send.size(),
                         g->ranks.size(), per_member);
  }
  ASSIGN_OR_RETURN(int n, ToInt(per_member, "count exchange"));
  std::vector<int64_t> recv(send.size());
  MPI_CHECK(MPI_Alltoall(send.data(), n, MPI_INT64_T, recv.data(), n, MPI_INT64_T, g->comm.get()),
            "count exchange");
  return recv;
}

StatusOr<Request> MpiCommunicator::PostAllToAllV(int64_t group, const void* send,
                                                 const std::vector<int64_t>& send_counts,
                                                 void* recv,
                                                 const std::vector<int64_t>& recv_counts,
                                                 DType dtype, CommStream) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  const MPI_Datatype type = MpiTypeOf(dtype);
  const size_t n = g->ranks.size();
  if (send_counts.size() != n || recv_counts.size() != n) {
    return InternalError("all-to-all-v: counts for {}/{} members, group has {}", send_counts.size(),
                         recv_counts.size(), n);
  }
  auto r = std::make_unique<MpiRequest>();
  int64_t sd = 0, rd = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int sc, ToInt(send_counts[i], "all-to-all-v"));
    ASSIGN_OR_RETURN(int rc, ToInt(recv_counts[i], "all-to-all-v"));
    ASSIGN_OR_RETURN(int sdi, ToInt(sd, "all-to-all-v"));
    ASSIGN_OR_RETURN(int rdi, ToInt(rd, "all-to-all-v"));
    r->counts[0].push_back(sc), r->counts[1].push_back(sdi);
    r->counts[2].push_back(rc), r->counts[3].push_back(rdi);
    sd += sc, rd += rc;
  }
  MPI_CHECK(MPI_Ialltoallv(send, r->counts[0].data(), r->counts[1].data(), type, recv,
                           r->counts[2].data(), r->counts[3].data(), type, g->comm.get(), r->get()),
            "all-to-all-v");
  return Request(std::move(r));
}

StatusOr<Request> MpiCommunicator::PostBroadcast(int64_t group, void* data, int64_t count,
                                                 DType dtype, int64_t root, CommStream) {
  ASSIGN_OR_RETURN(const GroupComm* g, Find(group));
  ASSIGN_OR_RETURN(int n, ToInt(count, "broadcast"));
  int root_pos = -1;
  for (size_t i = 0; i < g->ranks.size(); ++i) {
    if (g->ranks[i] == root) root_pos = static_cast<int>(i);
  }
  if (root_pos < 0) return InternalError("broadcast root {} is not in group {}", root, group);
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(MPI_Ibcast(data, n, MpiTypeOf(dtype), root_pos, g->comm.get(), r->get()), "broadcast");
  return Request(std::move(r));
}

StatusOr<Request> MpiCommunicator::PostSend(int64_t peer, const void* data, int64_t count,
                                            DType dtype, int tag, CommStream) {
  ASSIGN_OR_RETURN(int n, ToInt(count, "send"));
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(
      MPI_Isend(data, n, MpiTypeOf(dtype), static_cast<int>(peer), tag, world_.get(), r->get()),
      "send");
  return Request(std::move(r));
}

StatusOr<Request> MpiCommunicator::PostRecv(int64_t peer, void* data, int64_t count, DType dtype,
                                            int tag, CommStream) {
  ASSIGN_OR_RETURN(int n, ToInt(count, "recv"));
  auto r = std::make_unique<MpiRequest>();
  MPI_CHECK(
      MPI_Irecv(data, n, MpiTypeOf(dtype), static_cast<int>(peer), tag, world_.get(), r->get()),
      "recv");
  return Request(std::move(r));
}

Status MpiCommunicator::Barrier() { return MpiStatus(MPI_Barrier(world_.get()), "barrier"); }

StatusOr<std::vector<std::string>> MpiCommunicator::GatherToRoot(const std::string& bytes) {
  ASSIGN_OR_RETURN(int n, ToInt(static_cast<int64_t>(bytes.size()), "gather"));
  std::vector<int> sizes(rank_ == 0 ? size_ : 0), displs(sizes.size());
  MPI_CHECK(MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, world_.get()), "gather");
  std::string all;
  if (rank_ == 0) {
    int64_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSIGN_OR_RETURN(displs[i], ToInt(total, "gather"));
      total += sizes[i];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_CHECK(MPI_Gatherv(bytes.data(), n, MPI_BYTE, all.data(), sizes.data(), displs.data(),
                        MPI_BYTE, 0, world_.get()),
            "gather");
  std::vector<std::string> out;
  for (size_t i = 0; i < sizes.size(); ++i) out.push_back(all.substr(displs[i], sizes[i]));
  return out;
}

void MpiCommunicator::Abort(const std::string& message) {
  std::cerr << "shardscope: error: " << message << std::endl;
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; keeps [[noreturn]] honest.
}

}  // namespace shardscope::runtime
