#ifndef GOPT_ENGINE_ENGINE_H_
#define GOPT_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/memory_budget.h"
#include "engine/plan_cache.h"
#include "engine/plan_measurer.h"
#include "engine/plan_store.h"
#include "engine/policy_registry.h"
#include "gopt/v1/optimizer.pb.h"
#include "graph/importer.h"
#include "policy/policy.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"
#include "util/clock.h"

namespace gopt::engine {

struct EngineOptions {
  // Largest graph accepted, in top-level nodes; larger graphs are
  // ResourceExhausted. Default: 5,000,000 (what the importers accept).
  int64_t max_graph_nodes = 5'000'000;
  // Part of the time left until the client's deadline that the engine keeps
  // for sending the answer: the work stops at
  // deadline - clamp(fraction * time_left, min, max). Defaults: 20%, at
  // least 20 ms, at most 2 s.
  double deadline_reserve_fraction = 0.2;
  absl::Duration min_deadline_reserve = absl::Milliseconds(20);
  absl::Duration max_deadline_reserve = absl::Seconds(2);
  // Plans a policy decodes for zero-shot best-of-K besides its greedy one.
  int32_t policy_samples = policy::kDefaultZeroShotSamples;
  // Largest budget.fine_tune_steps accepted (InvalidArgument above it).
  // Default 10,000 (the GO paper fine-tunes for < 50).
  int32_t max_fine_tune_steps = 10'000;
  // The budget of a FINE_TUNE request that sets neither fine_tune_steps nor
  // seconds: at most this many steps and seconds, whichever ends first
  // (the client's deadline still bounds both). Defaults 50 steps and 60 s,
  // what the GO paper fine-tunes for on an unseen graph.
  int32_t default_fine_tune_steps = 50;
  double default_fine_tune_seconds = 60;
  // Most distinct options.baseline_methods accepted (duplicates are tried
  // once). Default 256 (every built-in combination is ~200).
  int32_t max_baseline_methods = 256;
  // Largest Chrome trace Evaluate builds; a request whose trace would be
  // larger is ResourceExhausted (estimated from the node count before the
  // trace is built, checked after). Default 32 MiB.
  int64_t max_trace_bytes = int64_t{32} << 20;
  // Runs plans for real for OptimizeRequest.verify and
  // EvaluateRequest.measure (gopt-server's WorkerPool); shared, thread-safe.
  // Null (default): such requests answer with simulated numbers and a
  // warning.
  std::shared_ptr<PlanMeasurer> measurer;
  // Largest graph, in nodes, fine-tuned with measured rewards
  // (OptimizeOptions.reward = REWARD_MEASURED; InvalidArgument above it).
  // Default 2000.
  int64_t max_measured_reward_nodes = policy::kDefaultMeasuredRewardMaxNodes;
  // The plan store (engine/plan_cache.h): a stored plan answers a request
  // or warm-starts it, and better plans are written back; shared,
  // thread-safe. Null (default): no store.
  std::shared_ptr<engine::PlanStore> plan_store;
  // Answers from the store kept in memory, so that an identical request
  // skips the import (engine::PlanCache); 0 = import every request.
  // Default 64.
  int plan_store_kept_answers = 64;
  // ... and at most this many bytes of them (request graphs and responses).
  int64_t plan_store_kept_answer_bytes = kDefaultKeptAnswerBytes;
  // Largest response an OptimizeRequest.return_graph may make, in bytes
  // (gopt-server: its message limit); larger is ResourceExhausted naming
  // it. 0 (default; the CLI): no limit.
  int64_t max_response_bytes = 0;
  // Topologies a request may name in topology.preset besides the built-in
  // presets, by the name given here (gopt-server --topology=FILE: the
  // file's path and its topology's name; the CLI: the --topology path),
  // loaded with their learned runtime models (DeviceProfile::
  // runtime_model). The first also serves requests that set no topology.
  // Empty (default): built-in presets and inline topologies only.
  std::vector<std::pair<std::string, simulator::Topology>> named_topologies;
};

// What the transport knows about one request.
struct RequestContext {
  // The client's deadline; InfiniteFuture when it set none.
  absl::Time deadline = absl::InfiniteFuture();
  // The time source for the deadline and every timing the engine reports
  // (passed on to the policies); borrowed, never null. Tests pass a
  // FakeClock to run deadlines deterministically.
  const Clock* clock = &Clock::Real();
  // Set (by another thread) when the client cancelled; the engine then
  // stops at the next stage boundary and returns Cancelled. May be null.
  const std::atomic<bool>* cancelled = nullptr;
  // Called with best-so-far after each stage (and on each policy progress
  // event), on the calling thread. May be empty.
  std::function<void(const gopt::v1::OptimizeProgress&)> on_progress;
  // The server's memory budget; null = unlimited (the CLI). The engine
  // reserves the request's estimated peak (EstimateRequestBytes) once the
  // graph's size is known, before the expensive work, and releases it when
  // the call returns.
  MemoryBudget* memory = nullptr;
};

// How long each policy's zero-shot proposal took per node, by graph size,
// so that a request whose deadline leaves less time than its own graph
// needs does not start a proposal it cannot finish (a zero-shot pass cannot
// be interrupted). Estimates scale with the request's own node count, so
// one client's large graph never makes another's small one look slow.
// Thread-safe.
class PolicyTimeEstimates {
 public:
  // Expected seconds of a zero-shot run of `policy` on `num_nodes` nodes:
  // the per-node rate of its last run on a graph of the nearest size class
  // (powers of two of the node count) times `num_nodes`; 0 when it never
  // ran.
  double ZeroShotSeconds(const std::string& policy, int64_t num_nodes) const;
  void RecordZeroShot(const std::string& policy, int64_t num_nodes,
                      double seconds);

 private:
  mutable absl::Mutex mutex_;
  // policy -> size class -> seconds per node.
  absl::flat_hash_map<std::string, std::map<int, double>> seconds_per_node_
      ABSL_GUARDED_BY(mutex_);
};

// The Optimize / Evaluate core, shared by gopt-server and the `gopt` CLI's
// in-process mode. Optimize imports the graph, builds the topology, tries
// the baseline heuristics (grouped per placement, via BestBaseline), runs
// every loaded policy that decides one of the requested tasks (or the one
// the request names), and answers with the fastest plan that fits in
// memory; that plan is never predicted slower than the default plan. With
// no policy loaded it answers with the best baseline, says so in `method`
// ("best-baseline:PLAN") and adds a warning. When a loaded policy chooses
// tile sizes (Policy::ProposeKernelTiles, e.g. a "cost-model-tile" policy)
// and the answer's plan fuses nodes, the response's kernel_tiles carry them
// (not with Budget BASELINES_ONLY, nor once the deadline passed or the
// client cancelled); a failure there is a warning.
//
// Errors (absl codes, converted once to gRPC by the server):
//   InvalidArgument  bad graph (naming node and field), bad topology, plan,
//                    task, budget, method or format;
//   ResourceExhausted graph over max_graph_nodes (or importer limits), its
//                    estimated memory over what the budget has left, a
//                    trace over max_trace_bytes;
//   NotFound          unknown policy;
//   FailedPrecondition no plan fits in the topology's memory;
//   DeadlineExceeded  the deadline passed and the request did not allow a
//                     partial result (or nothing was found yet);
//   Cancelled         the client cancelled.
// A policy is skipped (as if its time ran out) when the deadline leaves
// less time than its last zero-shot run took, scaled to this graph's size.
// No response carries a step time that is not finite and positive: a plan
// simulated so is never chosen, and a graph with no work at all (every
// plan 0 s) is InvalidArgument.
//
// The Engine is immutable after construction and safe to use from many
// threads at once; the policies it borrows must be too.
class Engine {
 public:
  // `policies` may be null (no policy: baselines only).
  Engine(const EngineOptions& options,
         std::shared_ptr<const PolicyRegistry> policies);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const gopt::v1::OptimizeRequest& request,
      const RequestContext& context) const;
  // Optimize, answered in wire form (what gopt-server sends): an answer the
  // plan store's memo keeps (engine::PlanCache) is its serialized bytes as
  // kept, never built or serialized again.
  absl::StatusOr<SerializedResponse> OptimizeSerialized(
      const gopt::v1::OptimizeRequest& request,
      const RequestContext& context) const;

  // Simulates the request's plan; with include_trace, the response carries
  // a Chrome trace. InvalidArgument for a plan that does not fit the graph
  // or topology (naming node and field); import errors as Optimize.
  absl::StatusOr<gopt::v1::EvaluateResponse> Evaluate(
      const gopt::v1::EvaluateRequest& request,
      const RequestContext& context) const;

  gopt::v1::ListPoliciesResponse ListPolicies() const;

  const EngineOptions& options() const { return options_; }

 private:
  const EngineOptions options_;
  const std::shared_ptr<const PolicyRegistry> policies_;
  graph::ImporterRegistry importers_;
  simulator::baselines::BaselineRegistry baselines_;
  simulator::RooflineCostModel cost_model_;
  // Learned from requests; the only state that changes after construction.
  mutable PolicyTimeEstimates policy_times_;
  // The plan store and the answers recently given from it (thread-safe).
  mutable engine::PlanCache plan_cache_;
};

// The tasks a request asks for; none set means placement, scheduling and
// fusion (what GO decides jointly).
policy::TaskSet RequestedTasks(const gopt::v1::Tasks& tasks);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_ENGINE_H_
