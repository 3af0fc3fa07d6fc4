// Transparent huge pages for large buffers streamed whole or read at random
// (the CPU executor's weights): one 2 MiB page takes one TLB entry where 4 KiB
// pages take 512, and a page walk per 4 KiB is a large part of the time of a
// memory-bound pass. A hint only: where the kernel does not support it (or
// transparent huge pages are off), buffers keep small pages.
#ifndef SHARDSCOPE_CORE_HUGE_PAGES_H_
#define SHARDSCOPE_CORE_HUGE_PAGES_H_

#include <cstddef>
#include <utility>

namespace shardscope {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The whole huge pages inside [p, p + bytes), as (first byte, length); length 0
// when none fits. Pure: what AdviseHugePages advises.
std::pair<size_t, size_t> WholeHugePages(const void* p, size_t bytes);

// Asks the kernel (madvise MADV_HUGEPAGE) to back the whole huge pages inside
// [p, p + bytes) with huge pages when they are first touched. Returns the bytes
// advised (0: none fits, or the hint was refused).
size_t AdviseHugePages(void* p, size_t bytes);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_HUGE_PAGES_H_
