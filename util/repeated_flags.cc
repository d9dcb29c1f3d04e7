#include "util/repeated_flags.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gopt::util {

absl::Status RefuseRepeatedFlags(int argc, const char* const* argv) {
  absl::flat_hash_set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    absl::string_view name = arg.substr(0, arg.find('='));
    // `--noname` sets the bool flag `name`; a flag whose own name starts
    // with "no" is then counted under the shorter name, which only matters
    // if both are given, and absl refuses that pair anyway.
    if (absl::ConsumePrefix(&name, "no") && name.empty()) name = "no";
    if (name.empty()) continue;
    if (!seen.insert(std::string(name)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name,
          " is given twice; give one value (a list flag takes a comma list: "
          "--",
          name, "=a,b)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gopt::util
