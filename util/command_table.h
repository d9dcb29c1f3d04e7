#ifndef GOPT_UTIL_COMMAND_TABLE_H_
#define GOPT_UTIL_COMMAND_TABLE_H_

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "util/flag_set.h"

namespace gopt::util {

// `PROGRAM help [COMMAND]`, `PROGRAM --help`, `PROGRAM COMMAND --help`.
struct HelpOptions {
  std::string command;  // "" = the overview of every command
};

// One parsed command line: the command's name and its Options struct, one
// alternative of `Variant` (a std::variant whose alternatives include
// HelpOptions).
template <typename Variant>
struct ParsedCommand {
  std::string name;  // the command, or "help"
  Variant options;
};

// The subcommands of one program (gopt, gopt-train), each with its Options
// struct and flags, so that the command line is parsed once into the
// options of one command and a flag another command takes is refused with
// a message naming both.
//
//   CommandTable<Options> table("gopt", kOverview);
//   table.Add<InspectOptions>("inspect", "inspect FILE", "print ...",
//                             InspectFlags(), FinishInspect, RunInspect);
//   ASSIGN_OR_RETURN(auto command, table.Parse(args));
//   RETURN_IF_ERROR(table.Run(command, std::cout));
//
// Immutable after the Add calls; Parse, Help and Run are then thread-safe.
template <typename Variant>
class CommandTable {
 public:
  using Parsed = ParsedCommand<Variant>;

  // `overview` is the program's help text with "{commands}" where the list
  // of commands goes.
  CommandTable(std::string program, std::string overview)
      : program_(std::move(program)), overview_(std::move(overview)) {}

  // Adds command `name`: its usage line ("inspect FILE"), a one-line
  // summary, its flags, `finish`, which takes the operands and checks
  // what no single flag can (its error is reported as InvalidArgument),
  // and `run`, the command's body (Run calls it).
  // `initial` (optional) makes the Options the flags then apply to from
  // the raw arguments (for defaults that depend on one flag, e.g. --task).
  // `more_help` is printed after the flags by `help NAME`.
  template <typename O>
  CommandTable& Add(
      std::string name, std::string usage, std::string summary,
      FlagSet<O> flags,
      std::function<absl::Status(std::vector<std::string>, O*)> finish,
      std::function<absl::Status(const O&, std::ostream&)> run,
      std::function<O(const std::vector<std::string>&)> initial = nullptr,
      std::string more_help = "") {
    Entry entry;
    entry.name = name;
    entry.usage = std::move(usage);
    entry.summary = std::move(summary);
    entry.more_help = std::move(more_help);
    entry.flag_help = flags.Help();
    entry.has_flag = [flags](const std::string& flag) {
      return flags.Has(flag);
    };
    entry.parse =
        [name, flags, finish, initial](
            const std::vector<std::string>& args) -> absl::StatusOr<Parsed> {
      O options = initial ? initial(args) : O{};
      std::vector<std::string> operands;
      // NotFound: a flag the command does not have (Parse names it).
      if (absl::Status parsed = flags.Parse(args, &options, &operands);
          !parsed.ok()) {
        return parsed;
      }
      if (absl::Status finished = finish(std::move(operands), &options);
          !finished.ok()) {
        return absl::InvalidArgumentError(finished.message());
      }
      return Parsed{name, Variant(std::move(options))};
    };
    entry.run = [run](const Variant& options, std::ostream& out) {
      return run(std::get<O>(options), out);
    };
    entries_.push_back(std::move(entry));
    return *this;
  }

  // Parses `args` (args[0] is the program's path). Errors, all
  // InvalidArgument with a message "PROGRAM COMMAND: ..." ready to print:
  // no or an unknown command, a flag the command does not take (naming the
  // commands that take it), a bad value, what `finish` refuses.
  absl::StatusOr<Parsed> Parse(const std::vector<std::string>& args) const {
    if (args.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(program_, ": no command; see ", program_, " help"));
    }
    const std::string& name = args[1];
    std::vector<std::string> rest(args.begin() + 2, args.end());
    if (name == "help" || name == "--help" || name == "-h") {
      if (rest.size() > 1 || (!rest.empty() && Find(rest[0]) == nullptr)) {
        return absl::InvalidArgumentError(absl::StrCat(
            program_, " help: no command '", absl::StrJoin(rest, " "), "'"));
      }
      return Parsed{"help", Variant(HelpOptions{rest.empty() ? "" : rest[0]})};
    }
    const Entry* entry = Find(name);
    if (entry == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          program_, ": unknown command '", name, "'; see ", program_, " help"));
    }
    if (std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
      return Parsed{"help", Variant(HelpOptions{name})};
    }
    absl::StatusOr<Parsed> parsed = entry->parse(rest);
    if (absl::IsNotFound(parsed.status())) {
      return NotAFlagOf(std::string(parsed.status().message()), *entry);
    }
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(program_, " ", name, ": ", parsed.status().message()));
    }
    return parsed;
  }

  // The overview with every command's usage and summary (command ""), or
  // one command's usage, summary, flags with their defaults and more help;
  // "" for an unknown command.
  std::string Help(const std::string& command) const {
    if (command.empty()) {
      std::string commands;
      for (const Entry& entry : entries_) {
        absl::StrAppend(&commands, "  ", entry.usage, "\n      ", entry.summary,
                        "\n");
      }
      return absl::StrReplaceAll(overview_, {{"{commands}", commands}});
    }
    const Entry* entry = Find(command);
    if (entry == nullptr) return "";
    std::string help =
        absl::StrCat("usage: ", program_, " ", entry->usage, " [FLAGS]\n\n",
                     entry->summary, "\n\nflags:\n", entry->flag_help);
    if (!entry->more_help.empty())
      absl::StrAppend(&help, "\n", entry->more_help);
    return help;
  }

  // Runs a command Parse returned: "help" prints Help(command) to `out`,
  // any other command its `run` (whose status it returns). InvalidArgument
  // for a command this table has not added.
  absl::Status Run(const Parsed& command, std::ostream& out) const {
    if (const auto* help = std::get_if<HelpOptions>(&command.options)) {
      out << Help(help->command) << "\n";
      return absl::OkStatus();
    }
    const Entry* entry = Find(command.name);
    if (entry == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(program_, ": unknown command '", command.name, "'"));
    }
    return entry->run(command.options, out);
  }

 private:
  struct Entry {
    std::string name;
    std::string usage;
    std::string summary;
    std::string more_help;
    std::string flag_help;
    std::function<bool(const std::string&)> has_flag;
    std::function<absl::StatusOr<Parsed>(const std::vector<std::string>&)>
        parse;
    std::function<absl::Status(const Variant&, std::ostream&)> run;
  };

  const Entry* Find(const std::string& name) const {
    for (const Entry& entry : entries_) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  }

  // "gopt inspect: --methods is not a flag of inspect (bench, optimize,
  // load take it); see gopt help inspect".
  absl::Status NotAFlagOf(const std::string& flag, const Entry& command) const {
    std::vector<std::string> owners;
    for (const Entry& entry : entries_) {
      if (entry.has_flag(flag.substr(2))) owners.push_back(entry.name);
    }
    std::string message = absl::StrCat(program_, " ", command.name, ": ", flag,
                                       " is not a flag of ", command.name);
    if (owners.empty()) {
      absl::StrAppend(&message, " (no command takes it)");
    } else {
      absl::StrAppend(&message, " (", absl::StrJoin(owners, ", "),
                      owners.size() == 1 ? " takes it)" : " take it)");
    }
    absl::StrAppend(&message, "; see ", program_, " help ", command.name);
    return absl::InvalidArgumentError(message);
  }

  std::string program_;
  std::string overview_;
  std::vector<Entry> entries_;
};

}  // namespace gopt::util

#endif  // GOPT_UTIL_COMMAND_TABLE_H_
