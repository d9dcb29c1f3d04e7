#include "engine/policy_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policy/card.h"
#include "util/status_macros.h"

namespace gopt::engine {

absl::Status AddTaskByName(absl::string_view task, policy::TaskSet* tasks) {
  if (task == "placement") {
    tasks->placement = true;
  } else if (task == "scheduling") {
    tasks->scheduling = true;
  } else if (task == "fusion") {
    tasks->fusion = true;
  } else if (task == "layout") {
    tasks->layout = true;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown task '", task,
                     "'; known: placement, scheduling, fusion, layout"));
  }
  return absl::OkStatus();
}

std::string TaskSetName(const policy::TaskSet& tasks) {
  std::vector<absl::string_view> names;
  if (tasks.placement) names.push_back("placement");
  if (tasks.scheduling) names.push_back("scheduling");
  if (tasks.fusion) names.push_back("fusion");
  if (tasks.layout) names.push_back("layout");
  return names.empty() ? "none" : absl::StrJoin(names, "+");
}

absl::Status PolicyRegistry::RegisterFactory(const std::string& kind,
                                             policy::PolicyFactory factory) {
  if (kind.empty() || !factory) {
    return absl::InvalidArgumentError(
        "a policy factory needs a kind and a callable");
  }
  if (!factories_.emplace(kind, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a policy factory for kind '", kind, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::Status PolicyRegistry::LoadDirectory(const std::string& directory) {
  ASSIGN_OR_RETURN(std::vector<policy::PolicyDirectory> listed,
                   policy::ListPolicyDirectories(directory));
  for (const policy::PolicyDirectory& entry : listed) {
    const std::string where = absl::StrCat("policy '", entry.path, "'");
    const std::string& kind = entry.fields.kind;
    const auto factory = factories_.find(kind);
    if (factory == factories_.end()) {
      return absl::NotFoundError(absl::StrCat(
          where, ": card.json: no policy factory for kind '", kind,
          "'; registered kinds: ",
          factories_.empty() ? "none" : absl::StrJoin(kinds(), ", ")));
    }
    absl::StatusOr<std::unique_ptr<policy::Policy>> loaded =
        factory->second(entry.path, entry.card);
    if (!loaded.ok()) return Annotate(loaded.status(), where);
    RETURN_IF_ERROR(Annotate(Add(*std::move(loaded)), where));
  }
  return absl::OkStatus();
}

absl::Status PolicyRegistry::Add(std::unique_ptr<policy::Policy> policy) {
  if (policy == nullptr || policy->info().name.empty()) {
    return absl::InvalidArgumentError("a policy needs a name");
  }
  const policy::PolicyInfo& info = policy->info();
  for (const auto& loaded : policies_) {
    if (loaded->info().name == info.name &&
        loaded->info().version == info.version) {
      return absl::AlreadyExistsError(absl::StrCat(
          "policy '", info.name, "' version '", info.version,
          "' is loaded twice (also from '", loaded->info().directory, "')"));
    }
  }
  policies_.push_back(std::move(policy));
  return absl::OkStatus();
}

absl::StatusOr<const policy::Policy*> PolicyRegistry::Find(
    absl::string_view name, absl::string_view version) const {
  const policy::Policy* found = nullptr;
  for (const auto& policy : policies_) {
    const policy::PolicyInfo& info = policy->info();
    if (info.name != name) continue;
    if (!version.empty()) {
      if (info.version == version) return policy.get();
      continue;
    }
    if (found == nullptr ||
        policy::VersionLess(found->info().version, info.version)) {
      found = policy.get();
    }
  }
  if (found != nullptr) return found;
  std::vector<std::string> loaded;
  for (const auto& policy : policies_) {
    loaded.push_back(
        absl::StrCat(policy->info().name, "@", policy->info().version));
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown policy '", name, version.empty() ? "" : "@", version,
      "'; loaded: ", loaded.empty() ? "none" : absl::StrJoin(loaded, ", ")));
}

std::vector<const policy::Policy*> PolicyRegistry::policies() const {
  std::vector<const policy::Policy*> result;
  result.reserve(policies_.size());
  for (const auto& policy : policies_) result.push_back(policy.get());
  return result;
}

std::vector<const policy::Policy*> PolicyRegistry::latest_policies() const {
  std::vector<const policy::Policy*> result;
  for (const auto& policy : policies_) {
    const policy::PolicyInfo& info = policy->info();
    absl::StatusOr<const policy::Policy*> latest = Find(info.name, "");
    if (latest.ok() && *latest == policy.get()) result.push_back(policy.get());
  }
  return result;
}

std::vector<std::string> PolicyRegistry::kinds() const {
  std::vector<std::string> result;
  for (const auto& [kind, factory] : factories_) result.push_back(kind);
  return result;
}

}  // namespace gopt::engine
