#ifndef GOPT_UTIL_MALLOC_TUNING_H_
#define GOPT_UTIL_MALLOC_TUNING_H_

namespace gopt {

// Keeps freed memory in the process for reuse (glibc mallopt): raises the
// thresholds above which glibc maps a block on its own and trims the heap,
// so that large temporary buffers freed on every pass (the GO network's
// tensors) are reused instead of mapped and faulted in afresh (measured: a
// PPO step takes half the time with it). For the main() of programs that
// run a network in a loop; process-wide, call once before starting threads.
// gopt-server pairs it with a HeapTrimmer (server/heap_trimmer.h), which
// returns memory explicitly when it is idle.
void KeepFreedMemory();

}  // namespace gopt

#endif  // GOPT_UTIL_MALLOC_TUNING_H_
