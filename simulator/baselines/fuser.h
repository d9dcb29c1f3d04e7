#ifndef GOPT_SIMULATOR_BASELINES_FUSER_H_
#define GOPT_SIMULATOR_BASELINES_FUSER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"

namespace gopt::simulator::baselines {

// A fusion heuristic: chooses which nodes run together as one kernel.
//
// Implementations are stateless: Fuse is const, thread-safe and
// deterministic for a given context and placement. Groups never span
// devices and never form a cycle between groups.
class Fuser {
 public:
  virtual ~Fuser() = default;
  Fuser(const Fuser&) = delete;
  Fuser& operator=(const Fuser&) = delete;

  // The registry name ("none", "greedy").
  virtual absl::string_view name() const = 0;

  // Returns one fusion group per node (Plan::fusion_group: equal ids >= 0
  // form one kernel, -1 runs alone), or an empty vector for no fusion.
  // `device` is the placement already chosen. InvalidArgument when `device`
  // has the wrong length.
  virtual absl::StatusOr<std::vector<int32_t>> Fuse(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const = 0;

 protected:
  Fuser() = default;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_FUSER_H_
