#ifndef GOPT_TRAINING_RECIPE_H_
#define GOPT_TRAINING_RECIPE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gopt::policy {

// A training recipe file: one JSON object whose keys are a command's flag
// names (without "--") and whose values are the flags' values: a string, a
// number, a bool, or an array of strings for a list flag (none containing a
// comma). The key "description" is free text and sets nothing. A shipped
// checkpoint's recipe lives beside it
// (policy/pretrained/<name>/recipe.json) and is read by
// `gopt-train expert --recipe=FILE`.
//
// Returns the recipe as flags, "--key=value" in key order (a list joined
// by commas), for the command's FlagSet to parse. InvalidArgument naming
// the file (and the key) when the file is not such an object; NotFound when
// it cannot be read.
absl::StatusOr<std::vector<std::string>> ReadRecipeFlags(
    const std::string& path);

}  // namespace gopt::policy

#endif  // GOPT_TRAINING_RECIPE_H_
