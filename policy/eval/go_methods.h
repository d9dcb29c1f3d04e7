#ifndef GOPT_POLICY_EVAL_GO_METHODS_H_
#define GOPT_POLICY_EVAL_GO_METHODS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "policy/policy.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"

// How a learned policy is run on a graph to compare it with the baselines:
// the GO paper's protocols and their warm-start rules, in one place for
// `gopt bench` and every other comparison. Torch-free: the policy is any
// policy::Policy.
namespace gopt::policy::eval {

// The protocols (method names):
//   go-zeroshot       the policy deciding placement, scheduling and fusion
//                     jointly, zero-shot (best of num_samples sampled plans
//                     and the greedy decode);
//   go-finetune       the same, then PPO fine-tuning on the graph for at
//                     most fine_tune_steps steps / fine_tune_seconds,
//                     warm-started from the best baseline combination (as
//                     gopt-server does: the baselines run first), so its
//                     time includes finding that baseline;
//   go-finetune-cold  the same fine-tuning, started from the policy's own
//                     zero-shot plan;
//   go-zeroshot-1by1  one task at a time: placement alone (default
//                     scheduling and fusion), then scheduling given that
//                     placement, then fusion given both, each zero-shot;
//   go-finetune-1by1  go-finetune one task at a time, with the same total
//                     budget: from the best baseline combination, placement
//                     alone is fine-tuned for a third of the steps and
//                     seconds, then scheduling given that plan, then fusion;
//   go-zeroshot-separate, go-finetune-separate
//                     the GO paper's "pl | sch | fu": each task decided on
//                     its own, the other two at their defaults, then the
//                     three decisions combined. Placement with FIFO order
//                     and no fusion; scheduling and fusion each on the
//                     `expert` placement (the paper uses the human expert's
//                     placement there) with the other at its default. The
//                     plan takes the devices of the first, the priorities
//                     of the second and the fusion groups of the third,
//                     less the groups the new placement splits across
//                     devices. Fine-tuned, each task gets a third of the
//                     budget and starts from the best baseline for that
//                     task alone (e.g. the best placement under FIFO and no
//                     fusion).
inline constexpr char kGoZeroShot[] = "go-zeroshot";
inline constexpr char kGoFineTune[] = "go-finetune";
inline constexpr char kGoFineTuneCold[] = "go-finetune-cold";
inline constexpr char kGoOneByOne[] = "go-zeroshot-1by1";
inline constexpr char kGoFineTuneOneByOne[] = "go-finetune-1by1";
inline constexpr char kGoSeparate[] = "go-zeroshot-separate";
inline constexpr char kGoFineTuneSeparate[] = "go-finetune-separate";

// The baseline protocol "best-baseline": the best of every combination.
inline constexpr char kBestBaseline[] = "best-baseline";

// True for the protocol names above (not best-baseline).
bool IsGoMethod(const std::string& method);

// True for the go-finetune* protocols.
bool IsFineTuneMethod(const std::string& method);

// The plan of "pl | sch | fu" (go-*-separate): the devices of `placed`, the
// priorities of `scheduled` and the fusion groups of `fused`, less every
// group whose members `placed` puts on different devices (a fusion group
// runs on one device). Dissolving whole groups cannot make the others form
// a cycle: a cycle through a dissolved group's members would have been one
// through the group. Layouts are the defaults; the method is `placed`'s.
simulator::Plan CombineSeparateDecisions(simulator::Plan placed,
                                         const simulator::Plan& scheduled,
                                         const simulator::Plan& fused);

// The budget of one protocol run.
struct GoMethodOptions {
  // Zero-shot decodes besides the greedy.
  int num_samples = kDefaultZeroShotSamples;
  uint64_t seed = 0;                      // the policy's sampling
  int fine_tune_steps = 50;               // go-finetune*: PPO steps at most
  double fine_tune_seconds = 60;          // go-finetune*: wall-clock budget
  int search_simulations_per_step = 512;  // plan search per PPO step
};

// What one protocol run made.
struct GoMethodResult {
  simulator::Plan plan;
  int fine_tune_steps = 0;  // PPO steps done (all tasks together)
  // The last Propose call's Proposal::zero_shot_decode (for go-zeroshot:
  // the decode that gave `plan`).
  std::string zero_shot_decode;
};

// Runs protocol `method` of `policy` on the simulator's graph and topology
// (`context` is the same graph and topology, for the baselines the warm
// starts come from). Errors: InvalidArgument for a name that is not a
// protocol; the policy's and baselines' errors. Thread-compatible: the
// policy's Propose must be safe to call (see Policy).
absl::StatusOr<GoMethodResult> RunGoMethod(
    const std::string& method, const Policy& policy,
    const simulator::Simulator& sim,
    const simulator::baselines::BaselineContext& context,
    const simulator::baselines::BaselineRegistry& registry,
    const GoMethodOptions& options);

}  // namespace gopt::policy::eval

#endif  // GOPT_POLICY_EVAL_GO_METHODS_H_
