#ifndef GOPT_CLIENT_BENCH_H_
#define GOPT_CLIENT_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "nlohmann/json.hpp"
#include "policy/eval/go_methods.h"
#include "policy/policy.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/topology.h"

namespace gopt::client {

// The learned-policy methods of `gopt bench` (they need
// BenchOptions::go_policy): the protocols of policy/eval/go_methods.h.
using policy::eval::CombineSeparateDecisions;
using policy::eval::IsGoMethod;
using policy::eval::kGoFineTune;
using policy::eval::kGoFineTuneCold;
using policy::eval::kGoFineTuneOneByOne;
using policy::eval::kGoFineTuneSeparate;
using policy::eval::kGoOneByOne;
using policy::eval::kGoSeparate;
using policy::eval::kGoZeroShot;

// What `gopt bench` runs.
struct BenchOptions {
  // Methods, each PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]], "best-baseline"
  // (the best of every combination) or a GO method (above). Empty = the
  // default list (DefaultBaselineMethods) plus best-baseline.
  std::vector<std::string> methods;
  uint64_t seed = 0;  // for randomised baselines and the policy's sampling
  // The GO policy the go-* methods run (borrowed; null = those rows report
  // an error).
  const policy::Policy* go_policy = nullptr;
  // Zero-shot decodes besides the greedy.
  int go_samples = policy::kDefaultZeroShotSamples;
  int go_fine_tune_steps = 50;       // go-finetune: PPO steps at most
  double go_fine_tune_seconds = 60;  // go-finetune: wall-clock budget
  // go-finetune: plans the plan search simulates after each PPO step.
  int go_search_simulations_per_step = 512;
};

// One method on one graph.
struct BenchRow {
  std::string method;
  // For best-baseline: the combination that won (else empty).
  std::string chosen_method;
  bool valid = false;  // a plan was made and simulated
  std::string error;   // why not
  double step_time_s = 0;
  double ratio_to_default = 0;      // step / default plan's step
  double ratio_to_lower_bound = 0;  // step / lower bound
  int64_t peak_memory_bytes = 0;    // the largest device's peak
  bool oom = false;
  double method_seconds = 0;  // time to make the plan (wall clock)
  int fine_tune_steps = 0;    // go-finetune: PPO steps done
  // go-zeroshot: the policy's decode that gave the plan
  // (Proposal::zero_shot_decode; empty when the policy names none).
  std::string zero_shot_decode;
};

struct BenchGraphResult {
  std::string graph;  // label (file name)
  int64_t nodes = 0;
  double lower_bound_s = 0;
  double default_step_time_s = 0;  // `single`: everything on device 0
  bool default_oom = false;
  std::vector<BenchRow> rows;
};

// Makes and simulates a plan for every method on `graph`. Errors of one
// method are recorded in its row; the call fails only for a graph the
// default plan cannot be simulated on. Not thread-safe per registry use.
absl::StatusOr<BenchGraphResult> BenchGraph(
    const graph::Graph& graph, const std::string& label,
    const simulator::Topology& topology,
    const simulator::baselines::BaselineRegistry& registry,
    const BenchOptions& options);

// {"topology": ..., "graphs": [{graph, nodes, lower_bound_s,
// default_step_time_s}], "rows": [{graph, nodes, method, step_time_s,
// ratio_to_default, ratio_to_lower_bound, peak_memory_bytes, oom,
// method_seconds, valid, error, chosen_method (best-baseline)}], "summary":
// [{method, geomean_ratio_to_default, geomean_ratio_to_lower_bound, graphs,
// wins}]}.
nlohmann::json BenchToJson(const std::string& topology,
                           const std::vector<BenchGraphResult>& results);

// Human tables: per graph, then the geometric-mean summary per method.
std::string BenchToText(const std::string& topology,
                        const std::vector<BenchGraphResult>& results);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_BENCH_H_
