#include "runtime/device/arena.h"

#include <algorithm>
#include <cstdlib>

#include "core/huge_pages.h"

namespace shardscope::runtime {
namespace {

int64_t RoundUp(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

class HostMemorySource final : public MemorySource {
 public:
  StatusOr<void*> Allocate(int64_t bytes, MemoryUse use) override {
    constexpr auto kHuge = static_cast<int64_t>(kHugePageBytes);
    const bool huge = use == MemoryUse::kWeights && bytes >= kHuge;
    const int64_t align = huge ? kHuge : Arena::kAlignment;
    void* p = std::aligned_alloc(static_cast<size_t>(align),
                                 static_cast<size_t>(RoundUp(std::max<int64_t>(bytes, 1), align)));
    if (p == nullptr) return InternalError("out of host memory allocating {} bytes", bytes);
    // A hint: the kernel may ignore it (transparent huge pages off), and the
    // memory is then as good as without it.
    if (huge) AdviseHugePages(p, static_cast<size_t>(RoundUp(bytes, align)));
    return p;
  }
  void Free(void* p) override { std::free(p); }
};

}  // namespace

MemorySource& HostMemory() {
  static HostMemorySource* source = new HostMemorySource();
  return *source;
}

Arena::Arena(MemorySource* source, int64_t initial_bytes, MemoryUse use)
    : source_(source), use_(use) {
  if (initial_bytes > 0) (void)AddChunk(initial_bytes);  // a failure shows at Allocate
}

Arena::~Arena() { FreeChunks(); }

void Arena::FreeChunks() {
  for (Chunk& c : chunks_) source_->Free(c.data);
  chunks_.clear();
}

Status Arena::AddChunk(int64_t bytes) {
  ASSIGN_OR_RETURN(void* p, source_->Allocate(bytes, use_));
  chunks_.push_back({p, bytes});
  offset_ = 0;
  ++system_allocations_;
  return Status::Ok();
}

StatusOr<void*> Arena::Allocate(int64_t bytes) {
  if (bytes < 0) return InvalidArgument("arena: negative size {}", bytes);
  const int64_t n = RoundUp(std::max<int64_t>(bytes, 1), kAlignment);
  if (chunks_.empty() || offset_ + n > chunks_.back().size) {
    // Grow geometrically so that a first step needs few chunks.
    const int64_t last = chunks_.empty() ? 0 : chunks_.back().size;
    RETURN_IF_ERROR(AddChunk(std::max({n, 2 * last, int64_t{1} << 20})));
  }
  void* p = static_cast<char*>(chunks_.back().data) + offset_;
  offset_ += n;
  used_ += n;
  return p;
}

Status Arena::Reset() {
  if (chunks_.size() > 1) {
    // One chunk that holds what this step used: the next step fits in it.
    const int64_t total = capacity();
    FreeChunks();
    RETURN_IF_ERROR(AddChunk(total));
  }
  offset_ = 0;
  used_ = 0;
  return Status::Ok();
}

int64_t Arena::capacity() const {
  int64_t n = 0;
  for (const Chunk& c : chunks_) n += c.size;
  return n;
}

}  // namespace shardscope::runtime
