#include "engine/child_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "util/status_macros.h"

namespace gopt::engine {
namespace {

constexpr char kPortLine[] = "listening on port ";
// How long the supervisor sleeps between looks at `stopping_` while it
// waits (for a port line, or out a backoff).
constexpr absl::Duration kPoll = absl::Milliseconds(100);
// A child that lived this long before it died is not crash-looping: the
// next backoff starts again from the minimum.
constexpr absl::Duration kHealthyUptime = absl::Minutes(1);

std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return absl::StrCat("killed by signal ", signal, " (", strsignal(signal),
                        signal == SIGKILL
                            ? "; the OS out-of-memory killer, or the "
                              "pool after the plan ran over its timeout"
                            : "",
                        ")");
  }
  if (WIFEXITED(status)) {
    return absl::StrCat("exited with code ", WEXITSTATUS(status));
  }
  return absl::StrCat("ended with wait status ", status);
}

// Waits until `give_up` for `fd` to carry the port line; appends what it
// read to `output`. The port, or an error saying what went wrong.
absl::StatusOr<int> ReadPort(int fd, absl::Time give_up,
                             const std::function<bool()>& stopping,
                             std::string* output) {
  while (true) {
    const size_t at = output->find(kPortLine);
    if (at != std::string::npos) {
      const size_t start = at + sizeof(kPortLine) - 1;
      const size_t end = output->find('\n', start);
      int port = 0;
      if (end != std::string::npos &&
          absl::SimpleAtoi(output->substr(start, end - start), &port) &&
          port > 0) {
        return port;
      }
    }
    if (stopping()) return absl::CancelledError("the pool is stopping");
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError("it printed no port in time");
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, absl::ToInt64Milliseconds(kPoll));
    if (ready <= 0) continue;
    char buffer[512];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) return absl::UnavailableError("it exited before listening");
    if (n < 0 && errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("reading its output: ", strerror(errno)));
    }
    if (n > 0) output->append(buffer, static_cast<size_t>(n));
    if (output->size() > (1 << 16)) output->erase(0, output->size() - 4096);
  }
}

}  // namespace

absl::StatusOr<std::string> WorkerBinaryBesideSelf() {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read /proc/self/exe: ", strerror(errno)));
  }
  self.resize(static_cast<size_t>(n));
  const std::string binary =
      absl::StrCat(self.substr(0, self.rfind('/') + 1), "gopt-worker");
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "no gopt-worker beside ", self, " (", binary, ": ", strerror(errno),
        "); give --worker_binary, or --workers=in-process"));
  }
  return binary;
}

absl::StatusOr<std::unique_ptr<ChildWorker>> ChildWorker::Start(
    const ChildWorkerOptions& options) {
  std::string binary = options.binary;
  if (binary.empty()) {
    absl::StatusOr<std::string> beside = WorkerBinaryBesideSelf();
    if (!beside.ok()) {
      return absl::FailedPreconditionError(beside.status().message());
    }
    binary = *std::move(beside);
  }
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker binary ", binary, " cannot be run: ", strerror(errno)));
  }
  std::unique_ptr<ChildWorker> worker(new ChildWorker(options, binary));
  std::string error;
  {
    absl::MutexLock lock(&worker->mutex_);
    worker->mutex_.Await(absl::Condition(
        +[](ChildWorker* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mutex_) {
          return w->child_.pid > 0 || !w->start_error_.empty();
        },
        worker.get()));
    error = worker->start_error_;
  }
  if (!error.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", binary, ": ", error));
  }
  return worker;
}

ChildWorker::ChildWorker(const ChildWorkerOptions& options, std::string binary)
    : options_(options),
      binary_(std::move(binary)),
      supervisor_([this] { Supervise(); }) {}

ChildWorker::~ChildWorker() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    if (child_.pid > 0) kill(child_.pid, SIGKILL);
  }
  if (supervisor_.joinable()) supervisor_.join();
}

absl::StatusOr<ChildWorker::Child> ChildWorker::Spawn() {
  std::vector<std::string> args = {
      binary_,
      "--listen=127.0.0.1:0",
      absl::StrCat("--cpu_executors=", options_.executor.cpu_executors),
      absl::StrCat("--threads_per_executor=",
                   options_.executor.threads_per_executor),
      absl::StrCat("--pin_threads=",
                   options_.executor.pin_threads ? "true" : "false"),
      absl::StrCat("--cuda_devices=", options_.executor.cuda_devices)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  const pid_t parent = getpid();
  const rlimit data_limit{static_cast<rlim_t>(options_.data_limit_bytes),
                          static_cast<rlim_t>(options_.data_limit_bytes)};
  const bool limit_data = options_.data_limit_bytes > 0;
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    dup2(pipe_fds[1], STDOUT_FILENO);
    if (limit_data) setrlimit(RLIMIT_DATA, &data_limit);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  const absl::StatusOr<int> port = ReadPort(
      pipe_fds[0], absl::Now() + absl::Seconds(options_.start_timeout_seconds),
      [this] {
        absl::MutexLock lock(&mutex_);
        return stopping_;
      },
      &output);
  if (!port.ok()) {
    close(pipe_fds[0]);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    return absl::UnavailableError(absl::StrCat(
        "gopt-worker (pid ", pid, ") did not start: ", port.status().message(),
        "; ", DescribeWaitStatus(status), "; it printed: '", output, "'"));
  }
  LOG(INFO) << "worker pool: local gopt-worker pid " << pid
            << " listening on 127.0.0.1:" << *port
            << (limit_data ? absl::StrCat(", RLIMIT_DATA ",
                                          options_.data_limit_bytes, " bytes")
                           : std::string());
  Child child;
  child.pid = pid;
  // Kept open while the child lives: a write to a closed pipe would kill it
  // with SIGPIPE.
  child.stdout_fd = pipe_fds[0];
  child.remote = MakeRemoteWorker(absl::StrCat("127.0.0.1:", *port));
  return child;
}

void ChildWorker::Supervise() {
  absl::Duration backoff = absl::Seconds(options_.min_backoff_seconds);
  while (true) {
    {
      absl::MutexLock lock(&mutex_);
      if (stopping_) return;
    }
    absl::StatusOr<Child> child = Spawn();
    const absl::Time started = absl::Now();
    if (child.ok()) {
      absl::MutexLock lock(&mutex_);
      if (stopping_) kill(child->pid, SIGKILL);
      child_ = *child;
      ++starts_;
      start_error_.clear();
    } else {
      LOG(WARNING) << "worker pool: " << child.status().message();
      absl::MutexLock lock(&mutex_);
      start_error_ = std::string(child.status().message());
    }
    if (child.ok()) {
      int status = 0;
      while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
      }
      close(child->stdout_fd);
      const std::string death = DescribeWaitStatus(status);
      absl::MutexLock lock(&mutex_);
      child_ = Child();
      dead_pid_ = child->pid;
      death_ = death;
      if (stopping_) return;
      LOG(WARNING) << "worker pool: local gopt-worker pid " << child->pid << " "
                   << death << "; starting another in " << backoff;
    }
    // Crash loops back off; a child that served a while starts afresh.
    if (child.ok() && absl::Now() - started >= kHealthyUptime) {
      backoff = absl::Seconds(options_.min_backoff_seconds);
    }
    const absl::Time wake = absl::Now() + backoff;
    backoff =
        std::min(backoff * 2, absl::Seconds(options_.max_backoff_seconds));
    absl::MutexLock lock(&mutex_);
    const auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return stopping_;
    };
    mutex_.AwaitWithDeadline(absl::Condition(&stop), wake);
  }
}

absl::StatusOr<ChildWorker::Child> ChildWorker::Running(absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return child_.pid > 0 || stopping_;
  };
  mutex_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (child_.pid > 0) return child_;
  if (stopping_) return absl::UnavailableError("the worker pool is stopping");
  return absl::UnavailableError(absl::StrCat(
      "no local gopt-worker is running (",
      start_error_.empty() ? std::string("the next one is starting")
                           : start_error_,
      ")"));
}

std::string ChildWorker::DeathOf(pid_t pid) {
  absl::MutexLock lock(&mutex_);
  const auto reaped = [this, pid]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return dead_pid_ == pid;
  };
  if (!mutex_.AwaitWithTimeout(absl::Condition(&reaped), absl::Seconds(1))) {
    return "";
  }
  return death_;
}

absl::StatusOr<worker::ExecutionResult> ChildWorker::Execute(
    const graph::Graph& graph, const simulator::Plan& plan,
    const worker::ExecuteOptions& options, absl::Time deadline) {
  absl::StatusOr<Child> child = Running(deadline);
  if (!child.ok()) return child.status();
  absl::StatusOr<worker::ExecutionResult> result =
      child->remote->Execute(graph, plan, options, deadline);
  if (result.ok() || absl::IsInvalidArgument(result.status())) return result;
  const absl::Status& status = result.status();
  std::string what(status.message());
  // The worker stops a plan past its deadline itself between nodes (its
  // message starts "execute: "); gRPC's own DEADLINE_EXCEEDED means the
  // child is still inside a kernel: only killing it stops the plan.
  const bool stuck = absl::IsDeadlineExceeded(status) &&
                     !absl::StartsWith(status.message(), "execute: ") &&
                     absl::Now() >= deadline;
  if (stuck) {
    LOG(WARNING) << "worker pool: local gopt-worker pid " << child->pid
                 << " still runs a plan past its timeout: killing it";
    kill(child->pid, SIGKILL);
    what =
        "still running at its deadline; the worker was killed and is "
        "restarted";
  }
  // A dead child's error says how it died; a live one's is the plan's.
  const std::string death = stuck || absl::IsUnavailable(status)
                                ? DeathOf(child->pid)
                                : std::string();
  return absl::Status(
      status.code(),
      absl::StrCat("local gopt-worker (pid ", child->pid, ") ",
                   death.empty() ? "" : absl::StrCat(death, ": "), what));
}

absl::Status ChildWorker::CheckHealth(absl::Time deadline) {
  std::shared_ptr<PoolWorker> remote;
  {
    absl::MutexLock lock(&mutex_);
    if (child_.pid <= 0) {
      if (start_error_.empty()) return absl::OkStatus();  // restarting
      return absl::UnavailableError(start_error_);
    }
    remote = child_.remote;
  }
  return remote->CheckHealth(deadline);
}

absl::Status ChildWorker::WaitReady(absl::Time deadline) {
  return Running(deadline).status();
}

absl::StatusOr<simulator::Topology> ChildWorker::Devices(absl::Time deadline) {
  ASSIGN_OR_RETURN(Child child, Running(deadline));
  return child.remote->Devices(deadline);
}

pid_t ChildWorker::pid() const {
  absl::MutexLock lock(&mutex_);
  return child_.pid;
}

std::string ChildWorker::address() const {
  absl::MutexLock lock(&mutex_);
  return child_.pid > 0 ? child_.remote->name() : std::string();
}

int64_t ChildWorker::starts() const {
  absl::MutexLock lock(&mutex_);
  return starts_;
}

}  // namespace gopt::engine
