#include "simulator/baselines/baseline_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/baselines/greedy_layout.h"
#include "simulator/baselines/heft_placer.h"
#include "simulator/baselines/memory_constrained_placer.h"
#include "simulator/baselines/metis_placer.h"
#include "simulator/baselines/schedulers.h"
#include "simulator/baselines/simple_placers.h"

namespace gopt::simulator::baselines {
namespace {

template <typename T>
absl::Status Add(absl::string_view task, std::unique_ptr<T> item,
                 std::vector<std::unique_ptr<T>>* items) {
  if (item == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot register a null ", task, " heuristic"));
  }
  const absl::string_view name = item->name();
  if (name.empty() || name.find('+') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad ", task, " heuristic name '", name,
                     "': it must be non-empty and contain no '+'"));
  }
  for (const std::unique_ptr<T>& existing : *items) {
    if (existing->name() == name) {
      return absl::AlreadyExistsError(
          absl::StrCat(task, " heuristic '", name, "' is already registered"));
    }
  }
  items->push_back(std::move(item));
  return absl::OkStatus();
}

template <typename T>
std::vector<std::string> Names(const std::vector<std::unique_ptr<T>>& items) {
  std::vector<std::string> names;
  names.reserve(items.size());
  for (const std::unique_ptr<T>& item : items) {
    names.emplace_back(item->name());
  }
  return names;
}

template <typename T>
absl::StatusOr<const T*> Find(absl::string_view task, absl::string_view name,
                              const std::vector<std::unique_ptr<T>>& items) {
  for (const std::unique_ptr<T>& item : items) {
    if (item->name() == name) return item.get();
  }
  return absl::NotFoundError(
      absl::StrCat("unknown ", task, " '", name,
                   "'; known: ", absl::StrJoin(Names(items), ", ")));
}

}  // namespace

absl::Status BaselineRegistry::AddPlacer(std::unique_ptr<Placer> placer) {
  return Add("placement", std::move(placer), &placers_);
}
absl::Status BaselineRegistry::AddScheduler(
    std::unique_ptr<Scheduler> scheduler) {
  return Add("scheduling", std::move(scheduler), &schedulers_);
}
absl::Status BaselineRegistry::AddFuser(std::unique_ptr<Fuser> fuser) {
  return Add("fusion", std::move(fuser), &fusers_);
}
absl::Status BaselineRegistry::AddLayoutAssigner(
    std::unique_ptr<LayoutAssigner> assigner) {
  return Add("layout", std::move(assigner), &layout_assigners_);
}

absl::StatusOr<const Placer*> BaselineRegistry::FindPlacer(
    absl::string_view name) const {
  return Find("placement", name, placers_);
}
absl::StatusOr<const Scheduler*> BaselineRegistry::FindScheduler(
    absl::string_view name) const {
  return Find("scheduling", name, schedulers_);
}
absl::StatusOr<const Fuser*> BaselineRegistry::FindFuser(
    absl::string_view name) const {
  return Find("fusion", name, fusers_);
}
absl::StatusOr<const LayoutAssigner*> BaselineRegistry::FindLayoutAssigner(
    absl::string_view name) const {
  return Find("layout", name, layout_assigners_);
}

std::vector<std::string> BaselineRegistry::PlacerNames() const {
  return Names(placers_);
}
std::vector<std::string> BaselineRegistry::SchedulerNames() const {
  return Names(schedulers_);
}
std::vector<std::string> BaselineRegistry::FuserNames() const {
  return Names(fusers_);
}
std::vector<std::string> BaselineRegistry::LayoutAssignerNames() const {
  return Names(layout_assigners_);
}

void RegisterBuiltinBaselines(BaselineRegistry* registry) {
  using Variant = MemoryConstrainedPlacer::Variant;
  // Fresh names on a fresh registry: these cannot fail, and a failure would
  // be a programming error caught by the registry test.
  registry->AddPlacer(std::make_unique<SinglePlacer>()).IgnoreError();
  registry->AddPlacer(std::make_unique<RoundRobinPlacer>()).IgnoreError();
  registry->AddPlacer(std::make_unique<RandomPlacer>()).IgnoreError();
  registry->AddPlacer(std::make_unique<ExpertPlacer>()).IgnoreError();
  registry->AddPlacer(std::make_unique<MetisPlacer>()).IgnoreError();
  registry->AddPlacer(std::make_unique<HeftPlacer>()).IgnoreError();
  registry
      ->AddPlacer(std::make_unique<MemoryConstrainedPlacer>(
          Variant::kEarliestTaskFirst))
      .IgnoreError();
  registry
      ->AddPlacer(std::make_unique<MemoryConstrainedPlacer>(
          Variant::kSmallCommunicationTimes))
      .IgnoreError();
  registry->AddScheduler(std::make_unique<FifoScheduler>()).IgnoreError();
  registry->AddScheduler(std::make_unique<CriticalPathScheduler>())
      .IgnoreError();
  registry->AddFuser(std::make_unique<NoFuser>()).IgnoreError();
  registry->AddFuser(std::make_unique<GreedyFuser>()).IgnoreError();
  registry->AddFuser(std::make_unique<GreedyJoinFuser>()).IgnoreError();
  registry->AddLayoutAssigner(std::make_unique<DefaultLayoutAssigner>())
      .IgnoreError();
  registry->AddLayoutAssigner(std::make_unique<GreedyLayoutAssigner>())
      .IgnoreError();
}

}  // namespace gopt::simulator::baselines
