#ifndef GOPT_ENGINE_POLICY_REGISTRY_H_
#define GOPT_ENGINE_POLICY_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy/policy.h"

namespace gopt::engine {

// The policies a server serves, loaded from a directory of checkpoints.
// Each sub-directory that holds a card.json (policy/card.h) is one policy,
// built by the PolicyFactory registered for its "kind". The
// built-in factories (builtin_policies.h) verify the checkpoint against
// "checkpoint_sha256" before loading it (policy/checkpoint_integrity.h).
// Filling the registry (RegisterFactory, LoadDirectory, Add) is not
// thread-safe; once filled, a const registry is safe to read from many threads,
// and so are the policies it owns.
//
//   PolicyRegistry registry;
//   RETURN_IF_ERROR(registry.RegisterFactory("go", GoPolicyFactory()));
//   RETURN_IF_ERROR(registry.LoadDirectory("policy/pretrained"));
class PolicyRegistry {
 public:
  PolicyRegistry() = default;
  PolicyRegistry(const PolicyRegistry&) = delete;
  PolicyRegistry& operator=(const PolicyRegistry&) = delete;

  // Makes cards of `kind` loadable. AlreadyExists for a kind registered
  // twice; InvalidArgument for an empty kind or a null factory.
  absl::Status RegisterFactory(const std::string& kind,
                               policy::PolicyFactory factory);

  // Loads every sub-directory of `directory` that holds a card.json, in
  // name order; sub-directories without one are skipped. Fails on the
  // first bad policy, naming its directory: NotFound when `directory` does
  // not exist; InvalidArgument for a card that is not JSON, misses
  // format_version / kind / name, has an unsupported format_version or a
  // field of the wrong type (tasks: an array of strings); NotFound for a
  // kind no
  // factory is registered for (listing the registered kinds); the
  // factory's own error (for the built-in ones: DataLoss for a checkpoint
  // whose SHA-256 is not the card's, FailedPrecondition for a card that
  // records none); AlreadyExists for a second policy with the same name and
  // version. gopt-server does not start when this fails.
  absl::Status LoadDirectory(const std::string& directory);

  // Adds an already built policy. AlreadyExists for a duplicate name and
  // version; InvalidArgument for a null policy or an empty name.
  absl::Status Add(std::unique_ptr<policy::Policy> policy);

  // The policy called `name` with `version`; an empty version picks the
  // highest one (numeric versions compare as numbers). NotFound naming the
  // policy and listing the loaded ones otherwise.
  absl::StatusOr<const policy::Policy*> Find(absl::string_view name,
                                             absl::string_view version) const;

  // Every loaded policy, in load order.
  std::vector<const policy::Policy*> policies() const;

  // Per policy name, the version Find(name, "") picks (the highest), in
  // load order: what a request that names no policy runs, so shipping a
  // new version beside an older one does not run both.
  std::vector<const policy::Policy*> latest_policies() const;

  // Registered factory kinds, sorted.
  std::vector<std::string> kinds() const;

 private:
  std::map<std::string, policy::PolicyFactory> factories_;
  std::vector<std::unique_ptr<policy::Policy>> policies_;
};

// Parses a task name ("placement", "scheduling", "fusion", "layout") into
// `tasks`. InvalidArgument naming the task otherwise.
absl::Status AddTaskByName(absl::string_view task, policy::TaskSet* tasks);

// "placement+scheduling+fusion": the set tasks joined by '+', in task
// order; "none" for the empty set.
std::string TaskSetName(const policy::TaskSet& tasks);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_POLICY_REGISTRY_H_
