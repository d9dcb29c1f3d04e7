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

// What ExactRequestKey covers, kept as bytes so that requests can be
// compared without hashing them (SHA-256 over a graph of megabytes costs
// about a millisecond): the graph's bytes and the rest, encoded. Equal
// identities have equal exact keys. Borrows the request's graph bytes
// (an inline graph's are serialized and owned) until Owned().
class ExactRequestIdentity {
 public:
  explicit ExactRequestIdentity(const gopt::v1::OptimizeRequest& request);
  ExactRequestIdentity(const ExactRequestIdentity& other);
  ExactRequestIdentity& operator=(const ExactRequestIdentity&) = delete;

  // A copy that owns its graph bytes (outlives the request).
  ExactRequestIdentity Owned() const;

  absl::string_view graph_bytes() const { return graph_bytes_; }
  // Bytes held: the graph's (when owned) and the rest's.
  size_t bytes() const { return inline_graph_.size() + rest_.size(); }
  // A fast, non-cryptographic hash of the identity (this process only).
  size_t Hash() const;
  bool operator==(const ExactRequestIdentity& other) const;

 private:
  bool owns_graph_bytes() const;

  std::string inline_graph_;
  absl::string_view graph_bytes_;  // into the request or inline_graph_
  std::string rest_;
};

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
