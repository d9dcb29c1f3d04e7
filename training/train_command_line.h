#ifndef GOPT_TRAINING_TRAIN_COMMAND_LINE_H_
#define GOPT_TRAINING_TRAIN_COMMAND_LINE_H_

// The `gopt-train` command line: parsed once, by ParseTrainCli, into the
// Options struct of one command (training/train_commands.h); RunTrainCommand
// runs it. A flag another command takes is refused, naming both.
//
// Adding a command: an Options struct and an
// `absl::Status RunX(const XOptions&, std::ostream&)` body
// (train_commands.h); in train_command_line.cc its flags and operand
// checks (a Flags and a Finish overload), a RunOptions overload and one
// AddCommand line; its alternative in TrainCommandOptions.

#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "training/train_commands.h"
#include "util/command_table.h"

namespace gopt::policy {

// The options of one gopt-train command, or of `gopt-train help`.
using TrainCommandOptions =
    std::variant<util::HelpOptions, PretrainCommandOptions,
                 FinetuneCommandOptions, EvalCommandOptions,
                 ExpertCommandOptions, CardHashOptions,
                 CostModelTrainCommandOptions, CostModelEvalCommandOptions,
                 RuntimeModelTrainCommandOptions>;
using TrainCommand = util::ParsedCommand<TrainCommandOptions>;

// Parses `args` (args[0] is the program's path). List flags (--tasks,
// --topologies, --graph) take comma lists and may be repeated, their values
// adding up (the first replaces the default list). The cost-model commands
// start from cost_model::DefaultRecipe(--task); `costmodel --task=runtime`
// is the costmodel-runtime command. Errors (InvalidArgument,
// "gopt-train COMMAND: ..." ready to print): no or an unknown command, a
// flag the command does not take, a bad value, a missing required flag.
absl::StatusOr<TrainCommand> ParseTrainCli(
    const std::vector<std::string>& args);

// The overview, or one command's usage and flags with their defaults.
std::string TrainCliHelp(const std::string& command);

// Runs the parsed command, its report to `out`.
absl::Status RunTrainCommand(const TrainCommand& command, std::ostream& out);

}  // namespace gopt::policy

#endif  // GOPT_TRAINING_TRAIN_COMMAND_LINE_H_
