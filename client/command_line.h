#ifndef GOPT_CLIENT_COMMAND_LINE_H_
#define GOPT_CLIENT_COMMAND_LINE_H_

// The `gopt` command line: parsed once, by ParseCli, into the Options struct
// of one command; RunCommand runs it. A flag belongs to the commands that
// take it: any other command refuses it, naming the flag and the command.
//
// Adding a command: an Options struct and an
// `absl::Status RunX(const XOptions&, std::ostream&)` body (local_commands.h
// or remote_commands.h); in command_line.cc its flags (a Flags overload),
// its operands and checks (a Finish overload), a RunOptions overload that
// calls RunX, and one AddCommand line; its alternative in CommandOptions.

#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/apply.h"
#include "client/calibrate.h"
#include "client/local_commands.h"
#include "client/measure.h"
#include "client/plans.h"
#include "client/remote_commands.h"
#include "util/command_table.h"

namespace gopt::client {

using util::HelpOptions;

// The options of one command: `gopt help`, or one of the commands.
using CommandOptions =
    std::variant<HelpOptions, InspectOptions, ConvertOptions, SimulateOptions,
                 BenchCommandOptions, GenerateOptions, OptimizeOptions,
                 EvaluateOptions, PoliciesOptions, HealthOptions,
                 LoadCommandOptions, CalibrateOptions, MeasureOptions,
                 PlansOptions, ApplyOptions>;

// One parsed command line: name ("inspect", ..., or "help") and options.
using Command = util::ParsedCommand<CommandOptions>;

// Parses `args` (args[0] is the program name) into one command's Options.
// Flag names may use '-' for '_'; list flags (--graph, --dim, --methods,
// --tasks) take comma lists and may be repeated, their values adding up.
// Errors (all InvalidArgument, the message "gopt COMMAND: ..." naming the
// flag or operand, ready to print): no
// or an unknown command; a flag the command does not take (naming the flag
// and the command); a bad value (--dim=batch, --repeat=0, an unknown bench
// method or generator family); a missing required flag or operand.
absl::StatusOr<Command> ParseCli(const std::vector<std::string>& args);

// The same over main()'s arguments.
absl::StatusOr<Command> ParseCli(int argc, char** argv);

// The overview (every command), or one command's usage and flags with
// their defaults. "" for an unknown command name.
std::string CliHelp(const std::string& command);

// Runs the parsed command, its report to `out`.
absl::Status RunCommand(const Command& command, std::ostream& out);

// The process exit code of a command's result: 0 for OK; 1 when the server
// or the machine failed (Unavailable, DeadlineExceeded, Internal, Unknown,
// Cancelled, Aborted, Unauthenticated, PermissionDenied) or health found
// the server not SERVING; 2 when an input (graph, topology, plan, policy)
// is invalid (every other code).
int ExitCodeFor(const absl::Status& status);

// Exit code of a command line ParseCli refused.
inline constexpr int kExitUsage = 64;

}  // namespace gopt::client

#endif  // GOPT_CLIENT_COMMAND_LINE_H_
