#include "engine/builtin_policies.h"

#include "policy/cost_model/layout_policy.h"
#include "policy/cost_model/tile_policy.h"
#include "policy/go/go_policy.h"
#include "util/status_macros.h"

namespace gopt::engine {

absl::Status RegisterBuiltinPolicies(PolicyRegistry* registry) {
  RETURN_IF_ERROR(registry->RegisterFactory("go", policy::GoPolicyFactory()));
  RETURN_IF_ERROR(registry->RegisterFactory("cost-model-layout",
                                            policy::LayoutCostModelFactory()));
  return registry->RegisterFactory("cost-model-tile",
                                   policy::TileCostModelFactory());
}

absl::StatusOr<std::shared_ptr<const PolicyRegistry>> LoadBuiltinPolicies(
    const std::string& directory) {
  auto registry = std::make_shared<PolicyRegistry>();
  RETURN_IF_ERROR(RegisterBuiltinPolicies(registry.get()));
  RETURN_IF_ERROR(registry->LoadDirectory(directory));
  return registry;
}

}  // namespace gopt::engine
