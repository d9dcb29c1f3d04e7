#ifndef GOPT_UTIL_REPEATED_FLAGS_H_
#define GOPT_UTIL_REPEATED_FLAGS_H_

#include "absl/status/status.h"

namespace gopt::util {

// For binaries whose flags are absl flags (gopt-server, gopt-worker, the
// benchmark and evaluation programs): absl keeps only the last value of a
// flag given twice, so `--workers=a --workers=b` would silently drop `a`.
// Call this before absl::ParseCommandLine: InvalidArgument naming the flag
// ("--workers is given twice; give one value (a list flag takes a comma
// list: --workers=a,b)") when any flag appears more than once in argv, in
// any of the forms `--name=v`, `--name v`, `-name=v`, `--noname`. Stops at
// `--`. Reads argv only; thread-safe.
absl::Status RefuseRepeatedFlags(int argc, const char* const* argv);

}  // namespace gopt::util

#endif  // GOPT_UTIL_REPEATED_FLAGS_H_
