// The XSpace importer: reads an XLA profile as the profiler saves it (*.xplane.pb, an
// XSpace protobuf, optionally gzipped) with libprotobuf's wire-level reader, and maps its
// TPU/GPU device planes onto the trace model (docs/trace_format.md, "Foreign traces:
// XLA/TPU"). The field numbers are those of tsl/profiler/protobuf/xplane.proto.
#ifndef SHARDSCOPE_IMPORTERS_XSPACE_IMPORTER_H_
#define SHARDSCOPE_IMPORTERS_XSPACE_IMPORTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "importers/xla_device_trace.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

// False when this build has no protobuf (SHARDSCOPE_WITH_PROTOBUF=OFF): both calls
// below then fail with a message that says so.
bool XspaceImporterBuilt();

// Decodes an XSpace held in `data` into its device planes (host and other planes are
// counted in `stats->ignored`; every XEvent read in `stats->events`). `name` is used in
// messages. DataLoss naming the byte offset and the message being read when the protobuf
// is truncated or corrupt; InvalidArgument when it holds no device plane.
StatusOr<std::vector<XlaDevice>> DecodeXspace(std::string_view data, const std::string& name,
                                              trace::ReadStats* stats);

// Reads `path` and hands its ops, steps and names to `sink`. Errors: NotFound, IoError,
// the decoder's. Nothing is delivered when decoding fails.
StatusOr<trace::ReadStats> ImportXspace(const std::string& path, trace::TraceSink* sink);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_XSPACE_IMPORTER_H_
