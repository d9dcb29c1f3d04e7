#ifndef GOPT_POLICY_CHECKPOINT_INTEGRITY_H_
#define GOPT_POLICY_CHECKPOINT_INTEGRITY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gopt::policy {

// A policy card (card.json) records the SHA-256 of every weights file it
// names, so that a policy whose checkpoint was corrupted, truncated, zeroed
// or swapped after it was made is refused at load instead of served:
//
//   {"checkpoint": "model.pt",
//    "checkpoint_sha256": {"model.pt": "<64 lowercase hex digits>"},
//    "checkpoint_sha256_recorded_by": "gopt-train costmodel (at save)", ...}
//
// Keys of "checkpoint_sha256" are paths relative to the policy directory
// (no "..", not absolute); the file "checkpoint" names must be among them,
// and every file listed is verified. The hash guards against accidents and
// against a tampered weights file; whoever can rewrite card.json as well
// can rewrite the hash, so the policy directory itself must stay read-only
// to the server (the Dockerfile copies it in as root).
inline constexpr char kCheckpointSha256Key[] = "checkpoint_sha256";
inline constexpr char kCheckpointSha256RecordedByKey[] =
    "checkpoint_sha256_recorded_by";

// Hashes the file `card["checkpoint"]` names (relative to `directory`) and
// records it: card["checkpoint_sha256"] = {<checkpoint>: <hex>} (replacing
// any earlier map) and card["checkpoint_sha256_recorded_by"] =
// `recorded_by` (what wrote the hash: a command line, "gopt-train pretrain
// (at save)"). Called by every command that writes a checkpoint, right
// after the checkpoint is saved. InvalidArgument for a card that names no
// checkpoint or an unsafe path; NotFound / DataLoss when the file cannot be
// read.
//
//   RETURN_IF_ERROR(model->Save(dir + "/model.pt"));
//   RETURN_IF_ERROR(RecordCheckpointSha256(dir, "gopt-train costmodel", &card));
absl::Status RecordCheckpointSha256(const std::string& directory,
                                    absl::string_view recorded_by,
                                    nlohmann::json* card);

// Verifies every file in card["checkpoint_sha256"] against its recorded
// hash and returns the path of the checkpoint the card names
// (`directory`/card["checkpoint"]), ready to load. What every policy
// factory calls before it loads weights. Errors name the file:
//   InvalidArgument   no "checkpoint", or a path with ".." / absolute, or
//                     "checkpoint_sha256" not a map of file -> 64 hex digits;
//   FailedPrecondition the card records no hash for its checkpoint (record
//                     it with `gopt-train card-hash --policy_dir=DIR`);
//   NotFound          a listed file is missing;
//   DataLoss          a file's SHA-256 is not the recorded one (message:
//                     file, expected and actual hash).
// Reads the files; thread-compatible (no shared state).
//
//   ASSIGN_OR_RETURN(std::string path, VerifiedCheckpointPath(dir, card));
//   ASSIGN_OR_RETURN(auto model, CostModel::Load(path));
absl::StatusOr<std::string> VerifiedCheckpointPath(const std::string& directory,
                                                   const nlohmann::json& card);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_CHECKPOINT_INTEGRITY_H_
