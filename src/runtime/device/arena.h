// Arena: bump allocation of backend memory, reused across steps. Allocate hands
// out aligned pieces of the current chunk; Reset frees them all at once and,
// when a step needed more than one chunk, replaces the chunks by one chunk of
// the step's total, so that every later step of the same size allocates
// nothing from the system. Memory comes from a MemorySource (host malloc for
// the CPU backend; device memory for a GPU one). Not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_ARENA_H_
#define SHARDSCOPE_RUNTIME_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace shardscope::runtime {

// What an arena's memory holds; a source may place each kind differently.
enum class MemoryUse : uint8_t {
  kScratch,  // activations, KV caches: first touched, and grown, during steps
  kWeights,  // filled once before the run, then read whole at every step
};

// Where an arena's chunks come from.
class MemorySource {
 public:
  virtual ~MemorySource() = default;
  // `bytes` of backend memory aligned to at least 64 bytes, or an error.
  virtual StatusOr<void*> Allocate(int64_t bytes, MemoryUse use) = 0;
  virtual void Free(void* p) = 0;
};

// 64-byte-aligned host memory. Weight chunks of kHugePageBytes (2 MiB) or more
// are aligned to it and asked to be backed by transparent huge pages
// (core/huge_pages.h): a decode step streams every weight once, and with 4 KiB
// pages each 4 KiB of that stream needs a TLB entry (a two-level walk under a
// hypervisor's nested paging). On the development VM one core streams ~19-22
// GB/s from 4 KiB pages and ~28-30 from 2 MiB ones (docs/BENCHMARKS.md, "CPU
// executor"). Scratch stays on 4 KiB pages: it is first touched inside timed
// ops, where a huge page's fault zeroes 2 MiB and may compact memory first (one
// prefill op took 1.7 s so).
MemorySource& HostMemory();

class Arena {
 public:
  static constexpr int64_t kAlignment = 64;

  // `source` is borrowed and must outlive the arena; `initial_bytes` may be 0.
  explicit Arena(MemorySource* source, int64_t initial_bytes = 0,
                 MemoryUse use = MemoryUse::kScratch);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `bytes` (rounded up to kAlignment) valid until the next Reset.
  StatusOr<void*> Allocate(int64_t bytes);
  // Frees every allocation; keeps (and coalesces) the memory for the next step.
  Status Reset();

  // Chunks taken from the source so far (the steady state adds none).
  int64_t system_allocations() const { return system_allocations_; }
  // Bytes handed out since the last Reset, and the bytes held.
  int64_t used() const { return used_; }
  int64_t capacity() const;
  // Where the chunks come from.
  MemorySource* source() const { return source_; }

 private:
  struct Chunk {
    void* data = nullptr;
    int64_t size = 0;
  };
  Status AddChunk(int64_t bytes);
  void FreeChunks();

  MemorySource* const source_;
  const MemoryUse use_;
  std::vector<Chunk> chunks_;
  int64_t offset_ = 0;  // in the last chunk
  int64_t used_ = 0;
  int64_t system_allocations_ = 0;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_ARENA_H_
