#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace shardscope {

std::pair<size_t, size_t> WholeHugePages(const void* p, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  const uintptr_t end = (begin + bytes) & ~(uintptr_t{kHugePageBytes} - 1);
  if (p == nullptr || end <= first) return {0, 0};
  return {first - begin, end - first};
}

size_t AdviseHugePages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const auto [offset, length] = WholeHugePages(p, bytes);
  if (length == 0) return 0;
  if (madvise(static_cast<char*>(p) + offset, length, MADV_HUGEPAGE) != 0) return 0;
  return length;
#else
  (void)p;
  (void)bytes;
  return 0;
#endif
}

}  // namespace shardscope
