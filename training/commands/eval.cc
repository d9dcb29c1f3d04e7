// gopt-train eval: see training/train_commands.h.

#include <memory>
#include <ostream>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "training/commands/common.h"
#include "training/go/zero_shot_eval.h"
#include "training/train_commands.h"
#include "util/status_macros.h"

namespace gopt::policy {

absl::Status RunEval(const EvalCommandOptions& options, std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   LoadPolicyModel(options.policy_dir));
  ASSIGN_OR_RETURN(nlohmann::json result,
                   go::EvaluateZeroShot(*model, options.graphs,
                                        options.topologies, ppo, out));
  if (!options.update_card) return absl::OkStatus();
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(options.policy_dir));
  card["metrics"]["held_out_zero_shot"] = {{"samples", ppo.samples_per_graph},
                                           {"tasks", options.go.tasks},
                                           {"rows", result["rows"]},
                                           {"summary", result["summary"]}};
  return WriteCardFile(options.policy_dir, card);
}

}  // namespace gopt::policy
