#include "tests/util/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gopt::testing {

ChildProcess::ChildProcess(const std::string& binary,
                           const std::vector<std::string>& args,
                           const std::vector<std::string>& environment) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    ADD_FAILURE() << "cannot make a pipe for " << binary;
    return;
  }
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    for (const std::string& variable : environment) {
      putenv(const_cast<char*>(variable.c_str()));
    }
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  reader_ = std::thread([this, fd = pipe_fds[0]] {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
      absl::MutexLock lock(&mutex_);
      log_.append(buffer, n);
    }
    close(fd);
  });
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
}

std::string ChildProcess::WaitForLog(const std::string& pattern,
                                     const std::string& what) {
  const std::regex re(pattern);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (absl::Now() < give_up) {
    {
      absl::MutexLock lock(&mutex_);
      std::smatch match;
      if (std::regex_search(log_, match, re)) {
        return match.size() > 1 ? match[1].str() : match[0].str();
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  ADD_FAILURE() << (what.empty() ? "no '" + pattern + "' in the log" : what)
                << ":\n"
                << log();
  return "";
}

std::string ChildProcess::log() {
  absl::MutexLock lock(&mutex_);
  return log_;
}

void ChildProcess::Signal(int signal) { kill(pid_, signal); }

int ChildProcess::Wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  exited_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace gopt::testing
