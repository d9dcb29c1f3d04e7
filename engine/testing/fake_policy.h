#ifndef GOPT_ENGINE_TESTING_FAKE_POLICY_H_
#define GOPT_ENGINE_TESTING_FAKE_POLICY_H_

#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "policy/policy.h"

namespace gopt::engine::testing {

struct FakePolicyOptions {
  std::string name = "fake";
  std::string version = "1";
  std::string kind = "fake";
  policy::TaskSet tasks;
  // The plan Propose returns: this baseline method's plan
  // ("single+fifo+greedy"). Empty = no plan: Propose blocks until
  // `release` is notified (then fails with Internal), the deadline passes
  // (DeadlineExceeded) or the request is cancelled (Cancelled).
  std::string method;
  // Notified when Propose starts; may be null. Borrowed.
  absl::Notification* started = nullptr;
  absl::Notification* release = nullptr;
  // When set, each Propose call's fine-tuning steps and deadline are
  // written here (borrowed; the test reads them after the call).
  int32_t* seen_fine_tune_steps = nullptr;
  absl::Time* seen_deadline = nullptr;
  // Time a proposal takes before it is returned (a zero-shot pass).
  absl::Duration delay = absl::ZeroDuration();
  // PolicyInfo::directory and card.
  std::string directory;
  nlohmann::json card;
};

// A Policy for tests: proposes a baseline heuristic's plan under its own
// name, or blocks (to provoke deadlines, cancellation and a full queue).
// Immutable; Propose is thread-safe.
class FakePolicy final : public policy::Policy {
 public:
  explicit FakePolicy(const FakePolicyOptions& options);

  const policy::PolicyInfo& info() const override { return info_; }
  absl::StatusOr<policy::Proposal> Propose(
      const simulator::Simulator& simulator,
      const policy::ProposeOptions& options) const override;

 private:
  const FakePolicyOptions options_;
  policy::PolicyInfo info_;
};

// Builds FakePolicy objects from card.json: name, version and tasks from
// the card, "method" (optional) as FakePolicyOptions::method.
policy::PolicyFactory FakePolicyFactory();

}  // namespace gopt::engine::testing

#endif  // GOPT_ENGINE_TESTING_FAKE_POLICY_H_
