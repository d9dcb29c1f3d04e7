#ifndef GOPT_POLICY_TRAIN_EXPERT_H_
#define GOPT_POLICY_TRAIN_EXPERT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"

// `gopt-train expert`: expert iteration (search distillation) of a GO
// policy, data-parallel over torch.distributed when WORLD_SIZE > 1.
namespace gopt::policy {

// What the command takes from gopt-train's shared flags.
struct ExpertCommandContext {
  std::string command_line;  // recorded in the card
  std::string git_revision;  // recorded in the card
  go::PpoOptions ppo;        // tasks, PPO settings, seed
  // Loads a policy directory's verified checkpoint (for --init_policy_dir
  // and --resume).
  std::function<absl::StatusOr<std::unique_ptr<go::GoModel>>(
      const std::string& dir)>
      load_policy;
};

// Runs the command from its flags (see train_expert.cc); prints progress
// and how long it ran to stderr. Returns the process exit code (0 = done).
int RunExpertCommand(const ExpertCommandContext& context);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_TRAIN_EXPERT_H_
