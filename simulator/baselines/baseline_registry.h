#ifndef GOPT_SIMULATOR_BASELINES_BASELINE_REGISTRY_H_
#define GOPT_SIMULATOR_BASELINES_BASELINE_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/fuser.h"
#include "simulator/baselines/layout_assigner.h"
#include "simulator/baselines/placer.h"
#include "simulator/baselines/scheduler.h"

namespace gopt::simulator::baselines {

// Baseline heuristics by name, one namespace per task (placement,
// scheduling, fusion, layout). The registry owns what is added to it.
// Adding is not thread-safe; once filled, a const registry is safe to read
// from many threads (the heuristics themselves are stateless).
//
//   BaselineRegistry registry;
//   RegisterBuiltinBaselines(&registry);
//   ASSIGN_OR_RETURN(const Placer* placer, registry.FindPlacer("metis"));
class BaselineRegistry {
 public:
  BaselineRegistry() = default;
  BaselineRegistry(const BaselineRegistry&) = delete;
  BaselineRegistry& operator=(const BaselineRegistry&) = delete;

  // Adds a heuristic under its name(). AlreadyExists when that task has a
  // heuristic of that name; InvalidArgument for a null pointer, an empty
  // name, or a name containing '+' (the method separator).
  absl::Status AddPlacer(std::unique_ptr<Placer> placer);
  absl::Status AddScheduler(std::unique_ptr<Scheduler> scheduler);
  absl::Status AddFuser(std::unique_ptr<Fuser> fuser);
  absl::Status AddLayoutAssigner(std::unique_ptr<LayoutAssigner> assigner);

  // The heuristic registered under `name`, owned by the registry. NotFound
  // naming the task and listing the known names otherwise ("unknown
  // placement 'foo'; known: single, round-robin, ...").
  absl::StatusOr<const Placer*> FindPlacer(absl::string_view name) const;
  absl::StatusOr<const Scheduler*> FindScheduler(absl::string_view name) const;
  absl::StatusOr<const Fuser*> FindFuser(absl::string_view name) const;
  absl::StatusOr<const LayoutAssigner*> FindLayoutAssigner(
      absl::string_view name) const;

  // Registered names per task, in registration order.
  std::vector<std::string> PlacerNames() const;
  std::vector<std::string> SchedulerNames() const;
  std::vector<std::string> FuserNames() const;
  std::vector<std::string> LayoutAssignerNames() const;

 private:
  std::vector<std::unique_ptr<Placer>> placers_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::vector<std::unique_ptr<Fuser>> fusers_;
  std::vector<std::unique_ptr<LayoutAssigner>> layout_assigners_;
};

// Registers every built-in heuristic, in this order:
//   placement:  single, round-robin, random, expert, metis, heft, m-etf,
//               m-sct
//   scheduling: fifo, critical-path
//   fusion:     none, greedy, greedy-join
//   layout:     default, greedy
// The first name of each task is the framework default. Must be called on
// a registry that has none of these names yet (it then cannot fail).
void RegisterBuiltinBaselines(BaselineRegistry* registry);

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_BASELINE_REGISTRY_H_
