#ifndef GOPT_POLICY_COST_MODEL_POLICY_LOADING_H_
#define GOPT_POLICY_COST_MODEL_POLICY_LOADING_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/cost_model/config_group.h"
#include "policy/cost_model/cost_model.h"
#include "policy/policy.h"

namespace gopt::policy::cost_model {

// What both cost-model policy factories load from a policy directory.
struct LoadedCostModel {
  PolicyInfo info;
  std::unique_ptr<CostModel> model;
};

// Loads the "cost-model-<task>" policy of `directory` (its parsed
// card.json `card`): the card's kind must be that, the checkpoint must
// match the card's recorded SHA-256 and be a model of `task`. The info gets
// the card's name (default "costmodel-<task>") and version (default "1"),
// the kind, `tasks`, the directory and the card. InvalidArgument naming the
// card or checkpoint otherwise; the card and checkpoint readers' errors.
absl::StatusOr<LoadedCostModel> LoadCostModelPolicy(
    const std::string& directory, const nlohmann::json& card, Task task,
    const TaskSet& tasks);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_POLICY_LOADING_H_
