#include "util/service_main.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "glog/logging.h"
#include "util/repeated_flags.h"

namespace gopt::util {

TerminationSignals::TerminationSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int TerminationSignals::Wait() const {
  int signal = 0;
  sigwait(&signals_, &signal);
  return signal;
}

void SetServiceUsage(absl::string_view usage, absl::string_view flags_file) {
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig config;
  config.contains_help_flags =
      [file = std::string(flags_file)](absl::string_view path) {
        return absl::EndsWith(path, file);
      };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
}

bool ParseServiceCommandLine(int argc, char** argv, absl::string_view program) {
  if (absl::Status repeated = RefuseRepeatedFlags(argc, argv); !repeated.ok()) {
    std::cerr << program << ": " << repeated.message() << "\n";
    return false;
  }
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::cerr << program << ": unexpected argument '" << positional[1]
              << "' (see --help)\n";
    return false;
  }
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  return true;
}

}  // namespace gopt::util
