// The JAX/XLA trace-viewer JSON importer: reads the Chrome-format trace that xprof /
// TensorBoard export for a JAX profile (*.trace.json.gz): device processes named
// "/device:TPU:N" (or GPU) by process_name events, threads ("XLA Ops", "Steps", …) named
// by thread_name events, X events whose args are strings (the HLO text in "long_name"),
// and a trailing empty "{}" event. The events are mapped as the XSpace importer maps
// the same lines (docs/trace_format.md, "Foreign traces: XLA/TPU").
#ifndef SHARDSCOPE_IMPORTERS_XLA_JSON_IMPORTER_H_
#define SHARDSCOPE_IMPORTERS_XLA_JSON_IMPORTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "importers/xla_device_trace.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

// Decodes trace-viewer JSON held in `data` into its device processes; events of other
// processes are counted in `stats->ignored`, malformed events in `stats->skipped`.
// `name` is used in messages. InvalidArgument when it is not a JSON trace or has no
// device process; DataLoss when the JSON is truncated or invalid (naming the event).
StatusOr<std::vector<XlaDevice>> DecodeXlaJson(std::string_view data, const std::string& name,
                                               trace::ReadStats* stats);

// Reads `path` (.json or .json.gz) and hands its ops, steps and names to `sink`. Errors:
// NotFound, IoError, the decoder's. Nothing is delivered when decoding fails.
StatusOr<trace::ReadStats> ImportXlaJson(const std::string& path, trace::TraceSink* sink);

// Microseconds as JSON prints them ("12.3456789") to whole ns and the ps beyond them
// (12345 ns + 679 ps), exact up to six decimals, rounded to the ps beyond. False when
// `token` is not a number.
bool ParseMicrosToNsPs(std::string_view token, int64_t* ns, int64_t* ps);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_XLA_JSON_IMPORTER_H_
