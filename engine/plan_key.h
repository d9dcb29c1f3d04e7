#ifndef GOPT_ENGINE_PLAN_KEY_H_
#define GOPT_ENGINE_PLAN_KEY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "gopt/v1/optimizer.pb.h"
#include "simulator/topology.h"

namespace gopt::engine {

// The exact key of a request ("x1-" + 64 hex digits): SHA-256 over the
// graph input as sent (its bytes or its gopt.v1.Graph, format and name),
// the import options (symbolic dims, default dim), the topology input, the
// tasks, the baseline methods and the policy name. Budget, seed, policy
// version, verify, partial results and store mode are left out (they do
// not change which plans are allowed). Computed before the import, so an
// identical request finds its entry without importing.
std::string ExactRequestKey(const gopt::v1::OptimizeRequest& request);

// The plan key of a request once imported ("k1-" + 64 hex digits), as
// gopt/v1/plan_store.proto documents: SHA-256 over `fingerprint`
// (graph/fingerprint.h), every number of `topology` (its name and source
// excluded), `tasks` (resolved: none set means placement, scheduling and
// fusion) and the request's baseline methods and policy name.
std::string PlanKey(absl::string_view fingerprint,
                    const simulator::Topology& topology,
                    const gopt::v1::Tasks& tasks,
                    const gopt::v1::OptimizeRequest& request);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_KEY_H_
