// BlockWriter: writes blocks of text to a file descriptor in the order they are
// given, on background threads, so the caller formats the next block while the
// earlier ones are written: one thread writes; with gzip, more threads compress
// blocks in parallel. The gzip output is a single gzip member (RFC 1952) whose
// deflate stream is the blocks deflated independently — each ends on a byte
// boundary (a sync flush), only the last is final — so any gzip reader (zlib,
// Python, Perfetto, browsers) reads it as one stream.
// One caller thread; the writer's threads are its own.
#ifndef SHARDSCOPE_TRACE_BLOCK_WRITER_H_
#define SHARDSCOPE_TRACE_BLOCK_WRITER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace shardscope::trace {

// A buffer of text being filled: the caller writes at data() + size and
// advances size, up to capacity.
struct TextBlock {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  size_t capacity = 0;
  // Grows to at least `capacity` bytes, keeping the text.
  void Reserve(size_t capacity);
};

struct BlockWriterOptions {
  bool gzip = false;
  int gzip_level = 1;
  // Compressing threads (gzip only); 0: one per hardware thread.
  int threads = 0;
  // Capacity of the blocks NewBlock() hands out.
  size_t block_bytes = size_t{4} << 20;
};

class BlockWriter {
 public:
  // Borrows `fd` (written from the current offset, never closed); `name` is
  // the file's name in error messages.
  BlockWriter(int fd, std::string name, const BlockWriterOptions& options);
  // Without Finish(): stops the threads; blocks not yet written are dropped.
  ~BlockWriter();
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  // An empty block of options.block_bytes capacity (a recycled one when possible).
  TextBlock NewBlock();
  // Queues `block` for writing; waits while too many blocks are pending. Returns
  // the first error of any earlier block (then nothing more is written).
  Status Write(TextBlock block);
  // Writes `last` and everything pending, ends the gzip stream, stops the
  // threads. Returns the first error; the caller fsyncs and closes the fd.
  Status Finish(TextBlock last);

  // Bytes handed to Write/Finish so far, and bytes written to the file.
  int64_t bytes_in() const { return bytes_in_; }
  int64_t bytes_out() const;

 private:
  struct Job {
    TextBlock in;
    std::string out;  // compressed
    uint32_t crc = 0;
    bool last = false;
    bool taken = false;  // by a compressing thread
    bool done = false;   // ready to write
  };
  Status Submit(TextBlock block, bool last);
  void CompressLoop();
  void WriteLoop();
  Status WriteAll(const char* data, size_t size);
  void Stop();

  const int fd_;
  const std::string name_;
  const BlockWriterOptions options_;
  size_t max_pending_ = 2;
  int64_t bytes_in_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> jobs_;  // in file order; the front is written next
  std::vector<TextBlock> free_;            // written blocks, for reuse
  Status error_;
  bool finishing_ = false;
  bool stop_ = false;
  int64_t bytes_out_ = 0;
  std::vector<std::thread> compressors_;
  std::thread writer_;
};

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_BLOCK_WRITER_H_
