#include "importers/file_bytes.h"

#include "trace/byte_source.h"

namespace shardscope::importers {

StatusOr<std::string> ReadFileBytes(const std::string& path) {
  ASSIGN_OR_RETURN(auto source, trace::OpenByteSource(path));
  std::string data;
  constexpr size_t kChunk = 1 << 20;
  while (true) {
    size_t old = data.size();
    data.resize(old + kChunk);
    ASSIGN_OR_RETURN(size_t n, source->Read(data.data() + old, kChunk));
    data.resize(old + n);
    if (n == 0) break;
  }
  return data;
}

}  // namespace shardscope::importers
