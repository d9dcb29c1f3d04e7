#ifndef GOPT_POLICY_CARD_H_
#define GOPT_POLICY_CARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

// A policy card (card.json) describes one policy directory:
//
//   {"format_version": 1, "kind": "go", "name": "go-multitask",
//    "version": "2", "tasks": ["placement", "scheduling", "fusion"],
//    "checkpoint": "model.pt", "checkpoint_sha256": {"model.pt": "..."},
//    ...kind-specific fields}
//
// This file is the one place cards are read and written: the server's
// policy registry, every policy factory, gopt-train and the test fakes read
// their fields through it. No function here throws (nlohmann's value() and
// get() throw on a type mismatch, and no exception may cross into the
// server). All functions are thread-safe.
namespace gopt::policy {

// The card format LoadDirectory and CheckCardComplete accept.
inline constexpr int kPolicyCardFormatVersion = 1;

// The fields every card may have, whatever its kind, typed.
struct PolicyCard {
  int64_t format_version = 0;  // 0 when absent
  std::string kind;            // "" when absent
  std::string name;            // "" when absent
  // A string as it is, an integer in decimal (a card may say "version": 2);
  // "" when absent.
  std::string version;
  // The task names; nullopt when the card has no "tasks" (which names are
  // valid is the factory's business: a cost-model card may name "tile").
  std::optional<std::vector<std::string>> tasks;
  std::string checkpoint;  // the weights file, relative; "" when absent
};

// Reads the common fields of `card`. Absent fields keep the defaults above.
// InvalidArgument naming the field when `card` is not an object or a field
// has the wrong type: format_version not an integer; kind, name or
// checkpoint not a string; version neither a string nor an integer; tasks
// not an array of strings.
//
// Example:
//   ASSIGN_OR_RETURN(PolicyCard fields, ParseCard(card));
//   info.version = fields.version.empty() ? "1" : fields.version;
absl::StatusOr<PolicyCard> ParseCard(const nlohmann::json& card);

// What a card in a served policy directory must hold besides well-typed
// fields: format_version kPolicyCardFormatVersion and a non-empty kind and
// name. InvalidArgument naming the field otherwise.
absl::Status CheckCardComplete(const PolicyCard& card);

// Reads and parses `directory`/card.json (no field checks: see ParseCard).
// NotFound when the file cannot be opened; InvalidArgument naming the file
// when it is not JSON.
absl::StatusOr<nlohmann::json> ReadCardFile(const std::string& directory);

// Writes `card` to `directory`/card.json, indented by 2. Internal naming the
// file when it cannot be written.
absl::Status WriteCardFile(const std::string& directory,
                           const nlohmann::json& card);

// The card's field `key` as text: a string as it is, an integer in decimal,
// `fallback` when the field is absent, of another type, or the card is not
// an object. For kind-specific fields; the common ones are in PolicyCard.
std::string CardText(const nlohmann::json& card, absl::string_view key,
                     absl::string_view fallback);

// The card's field `key` as a flag: true only when it is the JSON value
// true; false when absent, of another type, or the card is not an object.
bool CardFlag(const nlohmann::json& card, absl::string_view key);

// Whether policy version `a` sorts before `b`: numerically when both are
// integers ("9" < "10"), else as strings. The order the server's registry
// uses to pick the newest version of a policy name.
bool VersionLess(absl::string_view a, absl::string_view b);

// One policy directory: a sub-directory of a policy directory that holds a
// card.json, with the card and its checked common fields.
struct PolicyDirectory {
  std::string path;  // `parent`/NAME
  nlohmann::json card;
  PolicyCard fields;  // ParseCard + CheckCardComplete passed
};

// The sub-directories of `parent` that hold a card.json, in name order,
// each card read, parsed and checked complete; sub-directories without a
// card are skipped. NotFound when `parent` is not a directory; the first bad
// card's error (ReadCardFile, ParseCard, CheckCardComplete) prefixed with
// "policy 'PATH'" otherwise. What a server loading `parent` loads.
absl::StatusOr<std::vector<PolicyDirectory>> ListPolicyDirectories(
    const std::string& parent);

// The sub-directory of `parent` holding the newest policy of `kind`: the
// highest version (VersionLess; a card without a version is version "1") of
// the one policy name of that kind. That is the policy a server loading
// `parent` runs for requests that name none, so tools that default to "the
// shipped policy" follow a new release without edits. NotFound when `parent`
// holds no policy of `kind`; InvalidArgument, listing the names, when it
// holds policies of `kind` under more than one name (the caller must name
// one); ListPolicyDirectories' errors.
absl::StatusOr<std::string> NewestPolicyDirectory(const std::string& parent,
                                                  absl::string_view kind);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_CARD_H_
