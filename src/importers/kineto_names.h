// The Kineto importer's name tables: what an event's "cat" makes of it, which
// host ops it keeps (steps, collective calls), which GPU kernels communicate
// and which collective a kernel or PyTorch call name says, c10 dtype sizes and
// PyTorch's rank lists. Pure functions over strings; thread-safe.
// docs/trace_format.md ("Foreign traces: Kineto") lists every rule.
#ifndef SHARDSCOPE_IMPORTERS_KINETO_NAMES_H_
#define SHARDSCOPE_IMPORTERS_KINETO_NAMES_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_event.h"

namespace shardscope::importers {

// True when a GPU kernel named `name` is a communication kernel (NCCL, RCCL,
// MSCCL, vLLM/SGLang custom all-reduce). *collective is what the name says, or
// kNone when it says nothing (ncclDevKernel_Generic, SendRecv, Reduce).
bool IsCommKernelName(std::string_view name, trace::Collective* collective);

// The collective of PyTorch's args."Collective name" ("allreduce",
// "_allgather_base", "all_to_allv", …) or of an annotation ("nccl:all_reduce",
// "c10d::alltoall_base_"). kNone for calls the trace model has no collective
// for (reduce, gather, scatter, barrier, wait, coalesced); nullopt when unknown.
std::optional<trace::Collective> CollectiveFromPytorchName(std::string_view name);

// Bytes per element of a c10 ScalarType name as Kineto writes it ("Float" 4,
// "BFloat16" 2, "Long" 8, …); 0 when unknown. *ours: our dtype name
// ("fp32", "bf16", …) or the lower-cased input.
int64_t KinetoDtypeSize(std::string_view dtype, std::string* ours = nullptr);

// Parses a rank list as PyTorch writes it: "[0, 1, 2]". A list truncated as
// "[0, 1, 2, ..., ]" gives the ranks before the ellipsis and *truncated = true.
// False when `s` is not such a list.
bool ParseRankList(std::string_view s, std::vector<int64_t>* out, bool* truncated);

namespace kineto {

// `s` without leading and trailing ASCII whitespace.
std::string_view Trim(std::string_view s);

// s == lit, for a string literal (one length compare and a memcmp).
template <size_t N>
inline bool Eq(std::string_view s, const char (&lit)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// What an event is, from its "cat" (and "ph" for metadata).
enum class Kind : uint8_t {
  kUnknown,
  kKernel,    // a GPU kernel
  kGpuOther,  // GPU memcpy / memset
  kRuntime,   // CUDA/HIP runtime or driver call: joins kernels to host ops
  kHostOp,    // cpu_op, user_annotation: steps and collective args
  kPython,    // python_function: SGLang's run_batch
  kMeta,      // ph "M"
  kIgnore,
};

// The kind of an "X" event of category `cat`; kIgnore for categories the
// import does not use. Inline: it runs for every complete event.
inline Kind KindOfCat(std::string_view cat) {
  if (cat.empty()) return Kind::kIgnore;
  switch (cat[0]) {
    case 'k':
      return Eq(cat, "kernel") ? Kind::kKernel : Kind::kIgnore;
    case 'K':
      return Eq(cat, "Kernel") ? Kind::kKernel : Kind::kIgnore;
    case 'g':
      return Eq(cat, "gpu_memcpy") || Eq(cat, "gpu_memset") ? Kind::kGpuOther : Kind::kIgnore;
    case 'M':
      return Eq(cat, "Memcpy") || Eq(cat, "Memset") ? Kind::kGpuOther : Kind::kIgnore;
    case 'c':
      if (Eq(cat, "cpu_op")) return Kind::kHostOp;
      return Eq(cat, "cuda_runtime") || Eq(cat, "cuda_driver") ? Kind::kRuntime : Kind::kIgnore;
    case 'R':
      return Eq(cat, "Runtime") ? Kind::kRuntime : Kind::kIgnore;
    case 'D':
      return Eq(cat, "Driver") ? Kind::kRuntime : Kind::kIgnore;
    case 'u':
      return Eq(cat, "user_annotation") ? Kind::kHostOp : Kind::kIgnore;
    case 'O':
      return Eq(cat, "Operator") ? Kind::kHostOp : Kind::kIgnore;
    case 'p':
      return Eq(cat, "python_function") ? Kind::kPython : Kind::kIgnore;
    default:
      return Kind::kIgnore;
  }
}

// Which annotation a step span comes from, in order of preference.
enum class StepSource : uint8_t { kProfilerStep = 0, kVllmExecute, kSglangRunBatch };

// A host op the importer keeps: a step annotation or a collective call.
// kGemm: a host op whose "Input Dims" give a matrix product's shape (aten::mm,
// addmm, bmm, baddbmm, _scaled_mm): the kernels it launches get FLOPs and bytes.
enum class HostRole : uint8_t { kNone, kStep, kComm, kGemm };

// The role of a host op (kind kHostOp or kPython) named `name` in category
// `cat`; *step says which annotation when it is kStep.
HostRole RoleOfHostName(std::string_view name, Kind kind, std::string_view cat, StepSource* step);

// A parallelism dimension from a process-group description ("mesh_tp", "tp",
// "default_pg"): only when one of its words is exactly a dimension's name.
Dim DimOfDescription(std::string_view desc);

}  // namespace kineto
}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_KINETO_NAMES_H_
