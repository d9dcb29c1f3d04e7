#ifndef GOPT_UTIL_HUGE_PAGES_H_
#define GOPT_UTIL_HUGE_PAGES_H_

#include <cstddef>
#include <vector>

namespace gopt {

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes)
// with transparent huge pages when they are first touched. Importers of large
// graphs fill arrays of hundreds of MB once; with 4 KiB pages each page costs
// a page fault (a third of import time on a 1M-instruction module), with huge
// pages one fault covers 512 of them. Regions smaller than kMinBytes are left
// alone, as is everything on systems without transparent huge pages (where
// this does nothing). Never changes the contents; thread-safe.
void AdviseHugePages(const void* data, size_t bytes);

// Below this size advice is not worth a system call.
inline constexpr size_t kHugePageAdviceMinBytes = size_t{8} << 20;

// AdviseHugePages over the capacity of `values` (call after reserve()).
template <typename T>
void AdviseHugePagesForCapacity(const std::vector<T>& values) {
  AdviseHugePages(values.data(), values.capacity() * sizeof(T));
}

}  // namespace gopt

#endif  // GOPT_UTIL_HUGE_PAGES_H_
