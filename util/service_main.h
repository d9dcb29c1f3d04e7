#ifndef GOPT_UTIL_SERVICE_MAIN_H_
#define GOPT_UTIL_SERVICE_MAIN_H_

#include <signal.h>

#include "absl/strings/string_view.h"

// What the mains of gopt's gRPC services (gopt-server, gopt-worker) share
// around serving: the command line and --help, logging to stderr, and the
// SIGTERM/SIGINT that starts the shutdown.
namespace gopt::util {

// SIGTERM and SIGINT, taken synchronously by Wait. The constructor blocks
// them in the calling thread and so in every thread started after it:
// construct it first thing in main, before any thread starts. Not copyable;
// Wait is for one thread.
class TerminationSignals {
 public:
  TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Blocks until SIGTERM or SIGINT arrives; returns its number.
  int Wait() const;

 private:
  sigset_t signals_;
};

// Sets the program's usage message and makes --help and --helpshort list
// the flags defined in the source file whose path ends with `flags_file`
// (e.g. "server/main.cc"), with their help text and defaults; absl lists by
// default only the flags of a file named after the binary, and so printed
// "No flags matched" for gopt-server. Call once, before
// ParseServiceCommandLine.
void SetServiceUsage(absl::string_view usage, absl::string_view flags_file);

// Parses the command line into the absl flags (absl reports a bad or
// unknown flag and exits; --help prints the usage and exits), then sends
// glog's output to stderr. A flag given twice (RefuseRepeatedFlags) or a
// positional argument is an error: prints "<program>: " and the problem
// (e.g. "unexpected argument 'X' (see --help)") to stderr and returns false.
bool ParseServiceCommandLine(int argc, char** argv, absl::string_view program);

}  // namespace gopt::util

#endif  // GOPT_UTIL_SERVICE_MAIN_H_
