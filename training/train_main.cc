// gopt-train: trains and evaluates gopt's learned policies, one subcommand
// per job (gopt-train help). The command line is parsed once into one
// command's options (training/train_command_line.h); the bodies are in
// training/train_commands.h.

#include <iostream>

#include "glog/logging.h"
#include "training/train_command_line.h"
#include "util/malloc_tuning.h"

int main(int argc, char** argv) {
  // LibTorch logs through glog: to stderr, warnings and worse only.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_WARNING;
  google::InitGoogleLogging(argv[0]);
  absl::StatusOr<gopt::policy::TrainCommand> command =
      gopt::policy::ParseTrainCli(std::vector<std::string>(argv, argv + argc));
  if (!command.ok()) {
    std::cerr << command.status().message() << "\n";
    if (argc < 2) std::cerr << "\n" << gopt::policy::TrainCliHelp("") << "\n";
    return 2;
  }
  // Training runs the networks in a loop (see KeepFreedMemory).
  gopt::KeepFreedMemory();
  const absl::Status status =
      gopt::policy::RunTrainCommand(*command, std::cout);
  if (!status.ok()) {
    std::cerr << "gopt-train " << command->name << ": " << status.message()
              << "\n";
    return 1;
  }
  return 0;
}
