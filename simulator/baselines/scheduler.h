#ifndef GOPT_SIMULATOR_BASELINES_SCHEDULER_H_
#define GOPT_SIMULATOR_BASELINES_SCHEDULER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"

namespace gopt::simulator::baselines {

// A scheduling heuristic: chooses the priority of every node, which the
// simulator uses to pick among the ready ops of a device (highest first;
// ties in topological order).
//
// Implementations are stateless: Schedule is const, thread-safe and
// deterministic for a given context and placement.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // The registry name ("fifo", "critical-path").
  virtual absl::string_view name() const = 0;

  // Returns one priority per node, or an empty vector for the framework
  // default (every priority equal: topological order). `device` is the
  // placement already chosen (one entry per node). InvalidArgument when
  // `device` has the wrong length.
  virtual absl::StatusOr<std::vector<int32_t>> Schedule(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const = 0;

 protected:
  Scheduler() = default;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_SCHEDULER_H_
