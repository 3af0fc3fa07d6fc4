// The PyTorch profiler (Kineto) importer: reads a trace written by
// torch.profiler / Kineto (.json or .json.gz) into a TraceSink. GPU activities
// (kernels, memcpy, memset) become ops of the trace's global rank, one stream
// per CUDA/HIP stream; communication kernels get their collective, bytes and
// group from their own args or from the host-side record_param_comms they were
// launched from; ProfilerStep#N, vLLM execute_* and SGLang run_batch
// annotations become step spans. Times are absolute nanoseconds
// (baseTimeNanoseconds added when the file has it). Host events are used for
// these joins only. docs/trace_format.md ("Foreign traces: Kineto") lists
// every rule; kineto_names.h holds the name tables. Not thread-safe.
//
// The import is three steps, Perfetto-style: a tokenizer (kineto_tokenizer.h)
// turns raw JSON events into typed ones (kineto_events.h), a correlator
// (kineto_correlator.h) joins communication kernels to the host calls that
// launched them, and the delivery (kineto_importer.cc) assigns ranks and
// streams and hands everything to the sink.
//
// Everything the sink receives is delivered after the whole file is read:
// baseTimeNanoseconds and the joins may need its last bytes. Memory: the GPU
// ops (about 50 bytes each, kernel names interned) and the few host events the
// joins need.
#ifndef SHARDSCOPE_IMPORTERS_KINETO_IMPORTER_H_
#define SHARDSCOPE_IMPORTERS_KINETO_IMPORTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/byte_source.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {

// What the importer learned about the file besides its events.
struct KinetoInfo {
  std::optional<int32_t> rank;          // distributedInfo.rank
  std::optional<int32_t> world_size;    // distributedInfo.world_size
  std::optional<int64_t> base_time_ns;  // baseTimeNanoseconds, added to every ts
  std::vector<std::string> devices;     // deviceProperties names
  std::vector<int32_t> ranks;           // the ranks ops and spans were delivered on
};

// Reads `path` into `sink`. Errors are the reader's: NotFound, InvalidArgument
// (empty, not JSON, not a trace), DataLoss (truncated JSON or gzip, naming the
// byte offset); on an error nothing has been delivered. `info` may be null.
StatusOr<trace::ReadStats> ImportKineto(const std::string& path, trace::TraceSink* sink,
                                        KinetoInfo* info = nullptr,
                                        const trace::ReadOptions& options = {});
// The same over any ByteSource; `name` is used in messages.
StatusOr<trace::ReadStats> ImportKinetoFrom(trace::ByteSource* source, const std::string& name,
                                            trace::TraceSink* sink, KinetoInfo* info = nullptr,
                                            const trace::ReadOptions& options = {});
// The same over a plain file or buffer tokenized in parts on several threads
// (trace::ParseEventsParallel); ImportKineto picks it for plain files of at
// least two ReadOptions::range_bytes. Same result as ImportKinetoFrom.
StatusOr<trace::ReadStats> ImportKinetoParallel(const trace::RandomAccessInput& input,
                                                const std::string& name, trace::TraceSink* sink,
                                                KinetoInfo* info = nullptr,
                                                const trace::ReadOptions& options = {});

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_KINETO_IMPORTER_H_
