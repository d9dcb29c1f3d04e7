#ifndef GOPT_POLICY_POLICY_H_
#define GOPT_POLICY_POLICY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "util/clock.h"

namespace gopt::policy {

// The decisions a request asks for. Tasks left out keep the framework
// defaults (device 0 / FIFO / no fusion / default layouts) or, when a base
// plan is given, the base plan's decisions.
struct TaskSet {
  bool placement = true;
  bool scheduling = true;
  bool fusion = true;
  bool layout = false;
};

// What a loaded policy is; shown by ListPolicies and `gopt policies`.
struct PolicyInfo {
  std::string name;     // "go-multitask"
  std::string version;  // "1"
  // "go" (placement/scheduling/fusion), "cost-model-layout",
  // "cost-model-tile".
  std::string kind;
  TaskSet tasks;          // tasks it can decide
  std::string directory;  // where it was loaded from
  nlohmann::json card;    // the card.json it shipped with
};

// One progress event during Propose (best-so-far), for OptimizeStream.
struct ProposeProgress {
  std::string stage;  // "zero-shot", "fine-tune", "search"
  int32_t step = 0;
  double best_step_time_s = 0;
};

// The measured-reward limits every front end applies (gopt optimize and
// gopt-server, gopt-train finetune): the largest graph fine-tuned with
// measured rewards, the plans measured when the caller gives no number,
// and the most it may give.
inline constexpr int64_t kDefaultMeasuredRewardMaxNodes = 2000;
inline constexpr int32_t kDefaultRewardMeasurements = 64;
inline constexpr int32_t kMaxRewardMeasurements = 1024;

// Plans a policy decodes for zero-shot best-of-K besides its greedy decode,
// unless a caller says otherwise (the GO policy: one-device, hint and
// co-location placements, then samples; go/fine_tuning.h). 16: the GO policy's
// one-device placement, 2 hints and 13 co-location placements all fit.
inline constexpr int32_t kDefaultZeroShotSamples = 16;

struct ProposeOptions {
  TaskSet tasks;
  // A plan whose decisions for tasks outside `tasks` are kept (e.g. the
  // placement the layout model refines). Null = framework defaults.
  const simulator::Plan* base_plan = nullptr;
  // A plan refinement may start from, e.g. the best baseline found so far
  // (the plan must be for the same graph and topology). A policy that
  // fine-tunes keeps it as the incumbent when it beats the policy's own
  // zero-shot plan and searches around it; zero-shot results never use it.
  // Null = refinement starts from the zero-shot plan.
  const simulator::Plan* warm_start = nullptr;
  // 0 = zero-shot only; else at most this many fine-tuning steps.
  int32_t fine_tune_steps = 0;
  // Plans the refiner's local search simulates after each fine-tuning step
  // (around the best plan so far; 0 = fine-tuning alone). A policy without
  // such a search ignores it.
  int32_t search_simulations_per_step = 512;
  // Refinement (fine-tuning or search) stops at this time, read on `clock`.
  absl::Time deadline = absl::InfiniteFuture();
  // The time source for the deadline and for measuring the work; borrowed,
  // never null. Tests pass a FakeClock.
  const Clock* clock = &Clock::Real();
  // Refinement also stops once the best plan's step time is at or below
  // this (a lower bound times a tolerance). 0 (the default) = never.
  double stop_at_step_time_s = 0;
  // Plans decoded for zero-shot best-of-K besides the greedy decode.
  int32_t num_samples = kDefaultZeroShotSamples;
  uint64_t seed = 0;
  // Fine-tuning rewards from measured step times instead of the simulator
  // (OptimizeOptions.reward = REWARD_MEASURED): runs a plan for real and
  // returns its measured step time in seconds. Null (default) = simulated.
  // A policy that does not fine-tune ignores it.
  std::function<absl::StatusOr<double>(const simulator::Plan&)> measure_plan;
  // With measure_plan: the largest graph (nodes) and the most plans measured
  // per Propose. Defaults 2000 and 64.
  int64_t measured_reward_max_graph_nodes = kDefaultMeasuredRewardMaxNodes;
  int32_t measured_reward_max_measurements = kDefaultRewardMeasurements;
  // Set by the caller to stop work early (client cancelled); Propose then
  // returns the best plan found so far, or Cancelled if it has none.
  const std::atomic<bool>* cancelled = nullptr;
  // Called with best-so-far; may be null. Called on the Propose thread.
  std::function<void(const ProposeProgress&)> on_progress;
};

struct Proposal {
  simulator::Plan plan;    // plan.method names the policy ("go")
  double step_time_s = 0;  // simulated step time of `plan`
  bool oom = false;
  double zero_shot_step_time_s = 0;  // the best zero-shot plan's step time
  // Which of the policy's zero-shot decodes gave that plan (the GO policy:
  // go/fine_tuning.h ZeroShotResult::decode, e.g. "one-device" when every
  // node on one device with the network's priorities and fusion won);
  // empty for a policy with one decode.
  std::string zero_shot_decode;
  int32_t fine_tune_steps_done = 0;
  double inference_s = 0;  // featurize + network, zero-shot
  double fine_tune_s = 0;  // refinement wall time
  std::vector<std::string> warnings;
};

// Tile sizes proposed for one fused kernel: a fusion group of a plan.
struct KernelTile {
  int32_t fusion_group = -1;
  std::vector<int32_t> nodes;  // the group's nodes, in graph order
  // Tile extent per output dimension of the kernel's root (major to minor),
  // the chosen one and gopt's default (see the policy that proposes them).
  std::vector<int64_t> output_tile;
  std::vector<int64_t> default_output_tile;
  // The predicted runtime gain of output_tile over default_output_tile
  // (0.05 = 5% faster); 0 when the default is kept.
  double predicted_gain_over_default = 0;
  int32_t candidates_scored = 0;
};

// A loaded, ready-to-serve policy. Implementations are immutable after
// loading: Propose is const and thread-safe (a fine-tune copies the weights
// it changes), so one Policy serves concurrent requests.
class Policy {
 public:
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  virtual const PolicyInfo& info() const = 0;

  // Decides the requested tasks for the simulator's graph and topology and
  // scores the result with `simulator`. Errors: InvalidArgument when the
  // graph/topology is outside what the policy handles (naming why),
  // Cancelled / DeadlineExceeded when stopped before any plan exists,
  // Internal for a failure inside the model (never an exception).
  virtual absl::StatusOr<Proposal> Propose(
      const simulator::Simulator& simulator,
      const ProposeOptions& options) const = 0;

  // Tile sizes for the fused kernels (fusion groups) of `plan` on the
  // simulator's graph, one entry per group. Policies that do not choose
  // tile sizes return Unimplemented (this default). InvalidArgument when
  // `plan` does not fit the graph.
  virtual absl::StatusOr<std::vector<KernelTile>> ProposeKernelTiles(
      const simulator::Simulator& simulator,
      const simulator::Plan& plan) const {
    (void)simulator;
    (void)plan;
    return absl::UnimplementedError(info().name +
                                    " does not choose tile sizes");
  }

 protected:
  Policy() = default;
};

// Creates a policy from its directory and parsed card.json. Registered per
// card "kind" by the library that implements it.
using PolicyFactory = std::function<absl::StatusOr<std::unique_ptr<Policy>>(
    const std::string& directory, const nlohmann::json& card)>;

}  // namespace gopt::policy

#endif  // GOPT_POLICY_POLICY_H_
