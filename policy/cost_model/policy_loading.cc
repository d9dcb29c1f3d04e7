#include "policy/cost_model/policy_loading.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "util/status_macros.h"

namespace gopt::policy::cost_model {

absl::StatusOr<LoadedCostModel> LoadCostModelPolicy(
    const std::string& directory, const nlohmann::json& card, Task task,
    const TaskSet& tasks) {
  const std::string kind = absl::StrCat("cost-model-", TaskName(task));
  ASSIGN_OR_RETURN(const PolicyCard fields, ParseCard(card));
  if (fields.kind != kind) {
    return absl::InvalidArgumentError(absl::StrCat(
        directory, "/card.json: kind '", fields.kind, "' is not ", kind));
  }
  ASSIGN_OR_RETURN(const std::string checkpoint,
                   VerifiedCheckpointPath(directory, card));
  LoadedCostModel loaded;
  ASSIGN_OR_RETURN(loaded.model, CostModel::Load(checkpoint));
  if (loaded.model->options().task != task) {
    return absl::InvalidArgumentError(absl::StrCat(
        checkpoint, " is a ", TaskName(loaded.model->options().task),
        " model, not a ", TaskName(task), " model"));
  }
  loaded.info.name = fields.name.empty()
                         ? absl::StrCat("costmodel-", TaskName(task))
                         : fields.name;
  loaded.info.version = fields.version.empty() ? "1" : fields.version;
  loaded.info.kind = kind;
  loaded.info.tasks = tasks;
  loaded.info.directory = directory;
  loaded.info.card = card;
  return loaded;
}

}  // namespace gopt::policy::cost_model
