#ifndef GOPT_ENGINE_BUILTIN_POLICIES_H_
#define GOPT_ENGINE_BUILTIN_POLICIES_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/policy_registry.h"

namespace gopt::engine {

// Registers the factory of every policy kind gopt ships: "go" (the GO
// placement/scheduling/fusion policy, policy/go), "cost-model-layout"
// (the learned layout cost model, policy/cost_model) and "cost-model-tile"
// (the learned tile cost model: tile sizes of fused kernels). Each verifies
// the checkpoint against the SHA-256 its card records before loading it
// (policy/checkpoint_integrity.h). Errors: those of
// PolicyRegistry::RegisterFactory (AlreadyExists when called twice).
absl::Status RegisterBuiltinPolicies(PolicyRegistry* registry);

// A registry with the built-in kinds registered and every policy under
// `directory` loaded (PolicyRegistry::LoadDirectory, with its errors). What
// gopt-server does at start and what `gopt optimize` does in-process.
//
//   ASSIGN_OR_RETURN(auto policies, LoadBuiltinPolicies("policy/pretrained"));
absl::StatusOr<std::shared_ptr<const PolicyRegistry>> LoadBuiltinPolicies(
    const std::string& directory);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_BUILTIN_POLICIES_H_
