// The typed events the Kineto tokenizer keeps of a trace: GPU activities, the
// collective args PyTorch wrote, the runtime launches and host collective
// calls that join them, step annotations and stream names. Plain data; the
// correlator (kineto_correlator.h) and the delivery (kineto_importer.cc) read it.
#ifndef SHARDSCOPE_IMPORTERS_KINETO_EVENTS_H_
#define SHARDSCOPE_IMPORTERS_KINETO_EVENTS_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "importers/kineto_names.h"
#include "trace/trace_event.h"

namespace shardscope::importers::kineto {

// The collective args PyTorch writes on record_param_comms (and, in newer
// versions, on the NCCL kernels themselves).
struct CommArgs {
  std::string collective;  // "Collective name"
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t group_size = -1;
  int64_t rank = -1;  // "Rank": the caller for collectives, the peer for send/recv (group-local)
  int64_t rank_start = -1, rank_stride = -1;  // "Global rank start" / "Global rank stride"
  std::string dtype, in_split, out_split, pg_ranks, pg_name, pg_desc;
  // The host op's first input tensor ("Input Dims" / "Input type" of a trace
  // recorded with shapes): the message when the msg nelems args are absent.
  int64_t shape_nelems = -1;
  std::string shape_dtype;
  // The dims of the first three inputs (a GEMM host op's operands); empty: not given.
  std::array<std::vector<int64_t>, 3> inputs;
  bool any = false;

  void Clear() {  // keeps the strings' capacity: called for every event
    in_nelems = out_nelems = group_size = rank = rank_start = rank_stride = shape_nelems = -1;
    for (std::vector<int64_t>& dims : inputs) dims.clear();
    for (std::string* str : {&collective, &dtype, &in_split, &out_split, &pg_ranks, &pg_name,
                             &pg_desc, &shape_dtype}) {
      str->clear();
    }
    any = false;
  }
};

// A GPU kernel, memcpy or memset.
struct GpuOp {
  int64_t ts = 0, dur = 0;
  int64_t correlation = -1;
  int64_t external_id = -1;
  int32_t device = 0, stream = 0;
  int32_t name = 0;   // index into KinetoEvents::names
  int32_t args = -1;  // index into KinetoEvents::comm_args: the kernel's own collective args
  trace::Category category = trace::Category::kCompute;
  bool comm = false;
  trace::Collective name_collective = trace::Collective::kNone;  // what the kernel name says
};

// A CUDA/HIP runtime call with a correlation id: the launch of a GPU op.
struct RuntimeCall {
  int64_t correlation = 0, external_id = -1, tid = 0, ts = 0;
};

// A host-side collective call (record_param_comms, nccl:…, c10d::…).
struct HostComm {
  int64_t tid = 0, ts = 0, end = 0, external_id = -1;
  int32_t args = -1;                            // record_param_comms: index into comm_args
  std::optional<trace::Collective> collective;  // from the name (nccl:…, c10d::…) or the args
};

// A host matrix product (HostRole::kGemm) with the shape its Input Dims give:
// the cost of the kernels it launches.
struct HostGemm {
  int64_t tid = 0, ts = 0, end = 0, external_id = -1;
  int64_t flops = 0, bytes_read = 0, bytes_written = 0;
  std::string dtype;  // ShardScope's name ("bf16", "fp32", "fp8")
};

// A step annotation.
struct StepMark {
  int64_t ts = 0, dur = 0;
  int32_t step = -1;  // ProfilerStep#N; -1: numbered by start order
  StepSource source = StepSource::kProfilerStep;
};

// Well-formed events the import does not analyse, by "cat"/"ph"/"metadata" value.
struct IgnoredCount {
  std::string type, value;
  int64_t count = 0;
};

// Everything the tokenizer keeps of one file, in file order.
struct KinetoEvents {
  std::vector<std::string> names;  // GPU op names, interned
  std::vector<GpuOp> ops;
  std::vector<CommArgs> comm_args;
  std::vector<RuntimeCall> runtime;
  std::vector<HostComm> host_comms;
  std::vector<HostGemm> host_gemms;
  std::vector<StepMark> steps;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;  // (pid, tid)
  std::vector<IgnoredCount> ignored;
};

// Appends `part`, the events of the next stretch of the same file, to *total as
// if one tokenizer had read both: names interned in first-appearance order
// (`name_index` maps total's names to their ids), indices moved, later thread
// names winning.
void AppendKinetoEvents(KinetoEvents part, KinetoEvents* total,
                        std::unordered_map<std::string, int32_t>* name_index);

}  // namespace shardscope::importers::kineto

#endif  // SHARDSCOPE_IMPORTERS_KINETO_EVENTS_H_
