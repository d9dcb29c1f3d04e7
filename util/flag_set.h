#ifndef GOPT_UTIL_FLAG_SET_H_
#define GOPT_UTIL_FLAG_SET_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gopt::util {

// Parses one flag's text into a field. InvalidArgument naming the flag when
// the text is not a value of the field's type. Lists (std::vector) take a
// comma list and append, so a repeated list flag adds up.
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            std::string* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            bool* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            int32_t* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            int64_t* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            uint64_t* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            double* value);
absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            std::vector<std::string>* values);

// A field's value as --help shows it ("" for an empty string or list).
std::string FormatFlagValue(const std::string& value);
std::string FormatFlagValue(bool value);
std::string FormatFlagValue(int32_t value);
std::string FormatFlagValue(int64_t value);
std::string FormatFlagValue(uint64_t value);
std::string FormatFlagValue(double value);
std::string FormatFlagValue(const std::vector<std::string>& values);

// The flags of one command, each bound to a field of its Options struct, so
// the command line is read once, into one struct. Accepts `--name=value`,
// `--name value`, `--name` and `--noname` for bools, '-' for '_' in names
// (--budget-seconds), and `--` before operands that start with '-'. A list
// flag (std::vector<std::string>) takes a comma list and may be repeated:
// the values add up (the first occurrence replaces the default list).
//
//   FlagSet<InspectOptions> flags;
//   flags.Add("json", "print JSON", [](auto& o) -> auto& { return o.json; });
//   InspectOptions options;
//   std::vector<std::string> operands;
//   RETURN_IF_ERROR(flags.Parse({"--json", "a.hlo"}, &options, &operands));
//
// Every flag of a command is in its set and nowhere else, so a flag the
// command does not take is an error instead of being ignored.
//
// Immutable after the Add calls; Parse and Help are then thread-safe.
template <typename Options>
class FlagSet {
 public:
  // Binds flag `name` to the field `field(options)` returns a reference to;
  // its default is that field in a default-constructed Options.
  template <typename Field>
  FlagSet& Add(std::string name, std::string help, Field field) {
    Flag flag;
    flag.name = std::move(name);
    flag.help = std::move(help);
    using Value =
        std::remove_reference_t<decltype(field(std::declval<Options&>()))>;
    flag.is_bool = std::is_same_v<Value, bool>;
    const std::string flag_name = flag.name;
    flag.set = [field, flag_name](Options* options, absl::string_view text,
                                  bool first) {
      // A list's first occurrence replaces its default; later ones add.
      if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
        if (first) field(*options).clear();
      }
      return ParseFlagValue(flag_name, text, &field(*options));
    };
    Options defaults;
    flag.default_text = FormatFlagValue(field(defaults));
    flags_.push_back(std::move(flag));
    return *this;
  }

  // Binds flag `name` to a function that applies one value (for values
  // that are parsed further, e.g. NAME=VALUE pairs). `default_text` is what
  // --help shows as the default; a bool flag may be written alone.
  FlagSet& AddCustom(
      std::string name, std::string help, std::string default_text,
      std::function<absl::Status(Options*, absl::string_view)> set,
      bool is_bool = false) {
    Flag flag;
    flag.is_bool = is_bool;
    flag.name = std::move(name);
    flag.help = std::move(help);
    flag.default_text = std::move(default_text);
    flag.set = [set = std::move(set)](Options* options, absl::string_view text,
                                      bool) { return set(options, text); };
    flags_.push_back(std::move(flag));
    return *this;
  }

  // Adds every flag of `other`, parsed as this set's own but left out of
  // Help(): a command's advanced flags, which its help lists elsewhere
  // (gopt-train expert's recipe keys).
  FlagSet& AddUnlisted(const FlagSet& other) {
    for (Flag flag : other.flags_) {
      flag.listed = false;
      flags_.push_back(std::move(flag));
    }
    return *this;
  }

  // True when the set has a flag of that name.
  bool Has(absl::string_view name) const {
    for (const Flag& flag : flags_) {
      if (flag.name == name) return true;
    }
    return false;
  }

  // Applies `args` (what follows the command name) to `*options`, which
  // keeps its values for flags not given, and appends the operands to
  // `*operands`. Errors: NotFound with the message "--NAME" alone for a flag
  // this set does not have (the caller says whose set it is);
  // InvalidArgument for a bad or missing value.
  absl::Status Parse(const std::vector<std::string>& args, Options* options,
                     std::vector<std::string>* operands) const {
    std::vector<const Flag*> seen;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if (arg == "--") {
        operands->insert(operands->end(), args.begin() + i + 1, args.end());
        break;
      }
      if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') {
        operands->push_back(arg);
        continue;
      }
      const size_t equals = arg.find('=');
      std::string name = arg.substr(
          2, equals == std::string::npos ? std::string::npos : equals - 2);
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      const Flag* flag = Find(name);
      std::string value;
      if (equals != std::string::npos) {
        value = arg.substr(equals + 1);
      } else if (flag != nullptr && flag->is_bool) {
        value = "true";
      } else if (flag == nullptr && name.rfind("no", 0) == 0 &&
                 Find(name.substr(2)) != nullptr &&
                 Find(name.substr(2))->is_bool) {
        flag = Find(name.substr(2));
        value = "false";
      } else if (flag != nullptr) {
        if (i + 1 == args.size()) {
          return absl::InvalidArgumentError("--" + name + " needs a value (--" +
                                            name + "=VALUE)");
        }
        value = args[++i];
      }
      if (flag == nullptr) return absl::NotFoundError("--" + name);
      const bool first =
          std::find(seen.begin(), seen.end(), flag) == seen.end();
      if (first) seen.push_back(flag);
      if (absl::Status status = flag->set(options, value, first);
          !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }

  // One line per listed flag: "  --name (default: D)  help".
  std::string Help() const {
    std::string out;
    for (const Flag& flag : flags_) {
      if (!flag.listed) continue;
      out += "  --" + flag.name;
      if (!flag.default_text.empty()) {
        out += " (default " + flag.default_text + ")";
      }
      out += "\n      " + flag.help + "\n";
    }
    return out;
  }

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    bool listed = true;  // in Help()
    // Applies one value; `first`: the flag's first occurrence in a Parse.
    std::function<absl::Status(Options*, absl::string_view, bool first)> set;
  };

  const Flag* Find(absl::string_view name) const {
    for (const Flag& flag : flags_) {
      if (flag.name == name) return &flag;
    }
    return nullptr;
  }

  std::vector<Flag> flags_;
};

}  // namespace gopt::util

#endif  // GOPT_UTIL_FLAG_SET_H_
