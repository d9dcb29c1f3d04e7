#ifndef GOPT_TRAINING_COMMANDS_COMMON_H_
#define GOPT_TRAINING_COMMANDS_COMMON_H_

// What several gopt-train commands share (training/commands/*.cc only).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "training/go/corpus.h"
#include "training/train_commands.h"

namespace gopt::policy {

// `git rev-parse --short HEAD` of the working directory, "unknown" outside
// a checkout; recorded in cards.
std::string GitRevision();

// The current UTC time as 2026-01-31T12:00:00Z; recorded in cards.
std::string UtcNow();

// The GO model of policy directory `dir`, verified against its card's
// checkpoint_sha256 as the server verifies it.
absl::StatusOr<std::unique_ptr<go::GoModel>> LoadPolicyModel(
    const std::string& dir);

// The pre-training corpus of `data_dir` up to `max_nodes` nodes; what is
// skipped is reported on stderr.
absl::StatusOr<std::vector<go::CorpusGraph>> LoadCorpus(
    const std::string& data_dir, int max_nodes);

// PPO's options of the shared GO flags; InvalidArgument naming an unknown
// task.
absl::StatusOr<go::PpoOptions> PpoOptionsOf(const GoTrainingOptions& options);

}  // namespace gopt::policy

#endif  // GOPT_TRAINING_COMMANDS_COMMON_H_
