// gopt: command-line front end. The command line is parsed once into one
// command's options (client/command_line.h); the command's body runs from
// the gopt_cli library.

#include <google/protobuf/stubs/logging.h>

#include <iostream>

#include "client/command_line.h"
#include "glog/logging.h"
#include "util/malloc_tuning.h"

int main(int argc, char** argv) {
  // Corrupt protobuf input makes libprotobuf log (e.g. invalid UTF-8) before
  // the importer returns its own precise error; keep stderr to that one line.
  google::protobuf::SetLogHandler(nullptr);
  // LibTorch logs through glog: to stderr, warnings and worse only, and
  // without glog's "Logging before InitGoogleLogging()" notice.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_WARNING;
  google::InitGoogleLogging(argv[0]);
  // optimize and bench fine-tune the GO network in-process (see
  // KeepFreedMemory: a PPO step on an 85k-node graph takes 3x as long
  // without it).
  gopt::KeepFreedMemory();
  absl::StatusOr<gopt::client::Command> command =
      gopt::client::ParseCli(argc, argv);
  if (!command.ok()) {
    std::cerr << command.status().message() << "\n";
    if (argc < 2) std::cerr << "\n" << gopt::client::CliHelp("") << "\n";
    return gopt::client::kExitUsage;
  }
  const absl::Status status = gopt::client::RunCommand(*command, std::cout);
  const int exit_code = gopt::client::ExitCodeFor(status);
  if (exit_code == 1) {  // the server or the machine: say which code
    std::cerr << "gopt " << command->name << ": "
              << absl::StatusCodeToString(status.code()) << ": "
              << status.message() << "\n";
  } else if (!status.ok()) {
    std::cerr << "gopt " << command->name << ": " << status.message() << "\n";
  }
  return exit_code;
}
