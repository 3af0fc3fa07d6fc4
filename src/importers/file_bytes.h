// The whole content of a trace file in memory, gunzipped when compressed: for the
// importers whose formats are small or need random access (XSpace protobuf, XLA
// trace-viewer JSON, NCCL profiler output).
#ifndef SHARDSCOPE_IMPORTERS_FILE_BYTES_H_
#define SHARDSCOPE_IMPORTERS_FILE_BYTES_H_

#include <string>

#include "core/status.h"

namespace shardscope::importers {

// Errors are the ByteSource's: NotFound, IoError, DataLoss (corrupt or truncated gzip).
StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_FILE_BYTES_H_
