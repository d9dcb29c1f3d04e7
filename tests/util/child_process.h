#ifndef GOPT_TESTS_UTIL_CHILD_PROCESS_H_
#define GOPT_TESTS_UTIL_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gopt::testing {

// A program (gopt-server, gopt-worker) run as a child process by a test.
// Its stdout and stderr are collected by a reader thread into log(). The
// destructor kills the child (SIGKILL) if the test did not Wait for it.
// WaitForLog and log are thread-safe; the rest is for one thread.
class ChildProcess {
 public:
  // Starts `binary` with `args` (argv[1..]) and `environment` entries
  // (NAME=VALUE) added to this process's environment. A child that cannot
  // be started exits with 127, which Wait reports.
  ChildProcess(const std::string& binary, const std::vector<std::string>& args,
               const std::vector<std::string>& environment = {});
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Waits (up to 60 s) until the log matches the regular expression
  // `pattern`; returns its group 1 (the whole match when it has no group).
  // After 60 s, fails the test with `what` and the log, and returns "".
  std::string WaitForLog(const std::string& pattern,
                         const std::string& what = "");

  // Everything the child wrote so far.
  std::string log();

  // Sends `signal` to the child.
  void Signal(int signal);

  // Waits for the child to exit; returns its exit code, or -1 when a
  // signal ended it.
  int Wait();

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::thread reader_;
  absl::Mutex mutex_;
  std::string log_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace gopt::testing

#endif  // GOPT_TESTS_UTIL_CHILD_PROCESS_H_
