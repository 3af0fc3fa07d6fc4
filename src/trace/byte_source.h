// ByteSource: the bytes of a trace file, read front to back in chunks — a plain
// file, a gzip file (detected by its magic bytes, whatever the extension), or
// a buffer in memory (tests, fuzzer). Not thread-safe.
#ifndef SHARDSCOPE_TRACE_BYTE_SOURCE_H_
#define SHARDSCOPE_TRACE_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope::trace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `size` bytes into `dst`; returns 0 only at the end. Corrupt or
  // truncated compressed data is a kDataLoss error naming the offset.
  virtual StatusOr<size_t> Read(char* dst, size_t size) = 0;
  // Compressed bytes consumed so far (equal to the bytes read when plain).
  virtual int64_t raw_offset() const = 0;
  virtual bool compressed() const { return false; }
};

// Opens `path`; NotFound when it does not exist, IoError when it cannot be read.
StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path);
// Reads from `data`, which must outlive the source; gunzips when it starts with the gzip magic.
std::unique_ptr<ByteSource> MemoryByteSource(std::string_view data, std::string name);

// Reads `inner` ahead on a background thread (e.g. gunzips the next blocks
// while the caller parses this one), in blocks of `block_bytes`, at most
// `blocks` of them waiting. Same bytes and errors as `inner`; raw_offset()
// is the inner source's as of the bytes handed out so far.
std::unique_ptr<ByteSource> ReadAheadSource(std::unique_ptr<ByteSource> inner,
                                            size_t block_bytes = 1 << 20, size_t blocks = 4);

// The raw bytes of a file or buffer, read at any offset (no decompression), so
// several threads can each read their own part. Thread-safe.
class RandomAccessInput {
 public:
  virtual ~RandomAccessInput() = default;
  virtual int64_t size() const = 0;
  // Reads up to `n` bytes at `offset` into `dst`; fewer only at the end.
  virtual StatusOr<size_t> ReadAt(int64_t offset, char* dst, size_t n) const = 0;
};

// Opens `path`; NotFound when it does not exist, IoError when it cannot be read.
StatusOr<std::unique_ptr<RandomAccessInput>> OpenRandomAccess(const std::string& path);
// Over `data`, which must outlive it.
std::unique_ptr<RandomAccessInput> MemoryRandomAccess(std::string_view data);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_BYTE_SOURCE_H_
