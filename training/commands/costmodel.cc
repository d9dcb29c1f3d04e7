// gopt-train costmodel: see training/train_commands.h.

#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "training/train_commands.h"
#include "util/status_macros.h"

namespace gopt::policy {

CostModelTrainCommandOptions::CostModelTrainCommandOptions(
    cost_model::Task task) {
  const cost_model::CostModelRecipe recipe = cost_model::DefaultRecipe(task);
  request.model = recipe.model;
  request.train = recipe.train;
  request.name = absl::StrCat("costmodel-", cost_model::TaskName(task));
}

CostModelEvalCommandOptions::CostModelEvalCommandOptions(
    cost_model::Task task) {
  const cost_model::CostModelRecipe recipe = cost_model::DefaultRecipe(task);
  request.task = task;
  request.model = recipe.model;
  request.train = recipe.train;
  request.default_margin_cv = recipe.default_margin_cv;
}

absl::Status RunCostModelTrainCommand(
    const CostModelTrainCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(nlohmann::json result,
                   cost_model::RunCostModelTrain(options.request));
  out << (options.json ? result.dump() : result.dump(2)) << "\n";
  return absl::OkStatus();
}

absl::Status RunCostModelEvalCommand(const CostModelEvalCommandOptions& options,
                                     std::ostream& out) {
  ASSIGN_OR_RETURN(nlohmann::json result,
                   cost_model::RunCostModelEval(options.request));
  out << (options.json ? result.dump() : result.dump(2)) << "\n";
  return absl::OkStatus();
}

}  // namespace gopt::policy
