#include "util/malloc_tuning.h"

#include <malloc.h>

namespace gopt {

void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace gopt
