#ifndef GOPT_SIMULATOR_BASELINES_LAYOUT_ASSIGNER_H_
#define GOPT_SIMULATOR_BASELINES_LAYOUT_ASSIGNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"

namespace gopt::simulator::baselines {

// A layout heuristic: chooses the physical layout (minor_to_major) of every
// node's output 0.
//
// Implementations are stateless: AssignLayouts is const, thread-safe and
// deterministic for a given context and placement.
class LayoutAssigner {
 public:
  virtual ~LayoutAssigner() = default;
  LayoutAssigner(const LayoutAssigner&) = delete;
  LayoutAssigner& operator=(const LayoutAssigner&) = delete;

  // The registry name ("default", "greedy").
  virtual absl::string_view name() const = 0;

  // Returns one layout per node (Plan::layout; an empty entry keeps the
  // default), or an empty vector when every node keeps its default.
  // `device` is the placement already chosen. InvalidArgument when `device`
  // has the wrong length.
  virtual absl::StatusOr<std::vector<std::vector<int32_t>>> AssignLayouts(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const = 0;

 protected:
  LayoutAssigner() = default;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_LAYOUT_ASSIGNER_H_
