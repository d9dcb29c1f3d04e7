// gopt-train card-hash: see training/train_commands.h.

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "training/commands/common.h"
#include "training/train_commands.h"
#include "util/status_macros.h"

namespace gopt::policy {

// A card that already records the same hash is left as it is; one that
// records another hash is an error unless replace_hash, so that a changed
// checkpoint is never blessed by accident.
absl::Status RunCardHash(const CardHashOptions& options, std::ostream& out) {
  const std::string& dir = options.policy_dir;
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(dir));
  nlohmann::json updated = card;
  RETURN_IF_ERROR(RecordCheckpointSha256(
      dir, absl::StrCat(options.command_line, " (", UtcNow(), ")"), &updated));
  const nlohmann::json& hashes = updated[kCheckpointSha256Key];
  const auto recorded = card.find(kCheckpointSha256Key);
  if (recorded != card.end()) {
    if (*recorded == hashes) {
      out << dir << ": card.json already records " << hashes.dump() << "\n";
      return absl::OkStatus();
    }
    if (!options.replace_hash) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, "/card.json records ", recorded->dump(),
                       " but the checkpoint is now ", hashes.dump(),
                       "; pass --replace_hash if the new weights are meant"));
    }
  }
  RETURN_IF_ERROR(WriteCardFile(dir, updated));
  out << dir << ": recorded " << hashes.dump() << "\n";
  return absl::OkStatus();
}

}  // namespace gopt::policy
