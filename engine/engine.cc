#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/baseline_comparison.h"
#include "engine/decisions.h"
#include "engine/verify.h"
#include "graph/import/builtin_importers.h"
#include "graph/native/graph_proto.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/chrome_trace.h"
#include "simulator/lower_bound.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"

namespace gopt::engine {
namespace {

using gopt::v1::EvaluateRequest;
using gopt::v1::EvaluateResponse;
using gopt::v1::OptimizeProgress;
using gopt::v1::OptimizeRequest;
using gopt::v1::OptimizeResponse;
using simulator::Plan;
using simulator::SimulationResult;

policy::TaskSet Intersect(const policy::TaskSet& a, const policy::TaskSet& b) {
  policy::TaskSet result;
  result.placement = a.placement && b.placement;
  result.scheduling = a.scheduling && b.scheduling;
  result.fusion = a.fusion && b.fusion;
  result.layout = a.layout && b.layout;
  return result;
}

bool Empty(const policy::TaskSet& tasks) {
  return !tasks.placement && !tasks.scheduling && !tasks.fusion &&
         !tasks.layout;
}

gopt::v1::Tasks TasksToProto(const policy::TaskSet& tasks) {
  gopt::v1::Tasks proto;
  proto.set_placement(tasks.placement);
  proto.set_scheduling(tasks.scheduling);
  proto.set_fusion(tasks.fusion);
  proto.set_layout(tasks.layout);
  return proto;
}

// When the work on a request stops: its deadline less a reserve for
// sending the answer.
absl::Time WorkDeadline(const EngineOptions& options, absl::Time deadline,
                        absl::Time now) {
  if (deadline == absl::InfiniteFuture()) return deadline;
  const absl::Duration left = std::max(deadline - now, absl::ZeroDuration());
  const absl::Duration reserve =
      std::clamp(left * options.deadline_reserve_fraction,
                 options.min_deadline_reserve, options.max_deadline_reserve);
  return deadline - reserve;
}

// Cancelled when the client cancelled; DeadlineExceeded when the work
// deadline passed (`stage` says where); OK otherwise.
absl::Status StopStatus(const RequestContext& context, absl::Time work_deadline,
                        absl::string_view stage) {
  if (context.cancelled != nullptr && context.cancelled->load()) {
    return absl::CancelledError(
        absl::StrCat("the client cancelled the request (", stage, ")"));
  }
  if (context.clock->Now() >= work_deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("the deadline passed before ", stage, " finished"));
  }
  return absl::OkStatus();
}

// Chrome trace bytes per node, for refusing a trace before it is built
// (a real 253k-node trace was 123 MiB: ~500 bytes per node, rounded up).
constexpr int64_t kTraceJsonBytesPerNode = 600;

// OptimizeOptions.max_reward_measurements: its default (0) and largest value.
using policy::kDefaultRewardMeasurements;
using policy::kMaxRewardMeasurements;

// Fills a result row from a simulation; a step time that is not finite and
// positive makes the row invalid instead of reaching the client.
void SetSimulated(const SimulationResult& result, gopt::v1::MethodResult* row) {
  if (!UsableStepTime(result.step_time_s)) {
    row->set_error(absl::StrCat("simulated to ", result.step_time_s,
                                " s, which is not a step time"));
    return;
  }
  row->set_valid(true);
  row->set_step_time_s(result.step_time_s);
  row->set_oom(result.oom);
}

absl::Status NoWorkError(const graph::Graph& graph) {
  return absl::InvalidArgumentError(absl::StrCat(
      "graph '", graph.name(), "' has no work to optimize: its ",
      graph.num_nodes(),
      " nodes carry no FLOPs and no memory traffic, so every plan takes 0 s"));
}

// Memory held for a request. Before the import, a serialized graph is
// charged what its parse will cost plus the request's work on as many nodes
// as its bytes hold (both read off the wire, graph::ParseCost), so that a
// graph too large for the budget is refused before any parse allocates;
// once the graph is built, the reservation is replaced by one sized from
// its node count.
class RequestMemory {
 public:
  RequestMemory(MemoryBudget* budget, RequestWork work, bool trace)
      : budget_(budget), work_(work), trace_(trace) {}

  absl::Status BeforeInlineGraph(int64_t nodes) {
    if (budget_ == nullptr) return absl::OkStatus();
    return Reserve(EstimateRequestBytes(nodes, work_, trace_),
                   absl::StrCat("graph of ", nodes, " nodes"));
  }

  absl::Status BeforeParse(const graph::ParseCost& cost,
                           int64_t serialized_bytes) {
    if (budget_ == nullptr) return absl::OkStatus();
    return Reserve(cost.bytes + EstimateRequestBytes(cost.nodes, work_, trace_),
                   absl::StrCat("importing a ", serialized_bytes,
                                "-byte graph of up to ", cost.nodes, " nodes"));
  }

  absl::Status AfterImport(const graph::Graph& graph) {
    if (budget_ == nullptr) return absl::OkStatus();
    held_ = MemoryBudget::Reservation();
    return Reserve(EstimateRequestBytes(graph.num_nodes(), work_, trace_),
                   absl::StrCat("graph '", graph.name(), "' of ",
                                graph.num_nodes(), " nodes"));
  }

 private:
  absl::Status Reserve(int64_t bytes, const std::string& what) {
    ASSIGN_OR_RETURN(held_, budget_->Reserve(bytes, what));
    return absl::OkStatus();
  }

  MemoryBudget* const budget_;
  const RequestWork work_;
  const bool trace_;
  MemoryBudget::Reservation held_;
};

RequestWork WorkOf(const gopt::v1::Budget& budget) {
  switch (budget.mode()) {
    case gopt::v1::Budget::BASELINES_ONLY:
      return RequestWork::kBaselines;
    case gopt::v1::Budget::FINE_TUNE:
      return RequestWork::kFineTune;
    default:
      return RequestWork::kZeroShot;
  }
}

// ResourceExhausted errors of the importers, with this server's limit.
absl::Status WithNodeLimit(const absl::Status& status,
                           const EngineOptions& options) {
  if (status.code() != absl::StatusCode::kResourceExhausted) return status;
  return absl::ResourceExhaustedError(
      absl::StrCat(status.message(), " (this server accepts at most ",
                   options.max_graph_nodes, " nodes)"));
}

absl::StatusOr<graph::Graph> ImportGraph(
    const graph::ImporterRegistry& importers, const EngineOptions& options,
    const gopt::v1::GraphInput& input,
    const gopt::v1::OptimizeOptions& request_options, RequestMemory* memory) {
  graph::ImportOptions import;
  import.source_name = input.name().empty() ? "graph" : input.name();
  import.limits.max_nodes = options.max_graph_nodes;
  const double stop_within = request_options.stop_within_lower_bound();
  if (stop_within != 0 && !(stop_within >= 1 && std::isfinite(stop_within))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.stop_within_lower_bound must be 0 (off) or a factor >= 1, "
        "got ",
        stop_within));
  }
  if (request_options.default_dim() < 0) {
    return absl::InvalidArgumentError("options.default_dim must be >= 0");
  }
  if (request_options.default_dim() > 0) {
    import.default_symbolic_dim = request_options.default_dim();
  }
  for (const auto& [name, value] : request_options.symbolic_dims()) {
    if (value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.symbolic_dims['", name, "'] must be >= 0, got ", value));
    }
    import.symbolic_dims[name] = value;
  }
  switch (input.source_case()) {
    case gopt::v1::GraphInput::kGraph: {
      const gopt::v1::Graph& proto = input.graph();
      if (proto.nodes_size() > options.max_graph_nodes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "graph.graph has ", proto.nodes_size(),
            " nodes; this server accepts at most ", options.max_graph_nodes));
      }
      if (proto.nodes_size() == 0) {
        return absl::InvalidArgumentError("graph.graph has no nodes");
      }
      RETURN_IF_ERROR(memory->BeforeInlineGraph(proto.nodes_size()));
      absl::StatusOr<graph::Graph> graph =
          graph::GraphFromProto(proto, import.limits);
      if (!graph.ok()) {
        return Annotate(graph.status(),
                        absl::StrCat("graph.graph '", import.source_name, "'"));
      }
      return graph;
    }
    case gopt::v1::GraphInput::kSerialized: {
      std::string format = input.format().empty() ? "auto" : input.format();
      if (format != "auto" && !importers.Find(format).ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph.format: ", importers.Find(format).status().message()));
      }
      // The memory budget is charged the parse before it runs; a refusal
      // is returned as the budget wrote it.
      absl::Status refused;
      absl::StatusOr<graph::Graph> graph = importers.Import(
          input.serialized(), format, import,
          [&](const graph::ParseCost& cost) {
            refused = memory->BeforeParse(
                cost, static_cast<int64_t>(input.serialized().size()));
            return refused;
          });
      if (!refused.ok()) return refused;
      if (!graph.ok()) return WithNodeLimit(graph.status(), options);
      return graph;
    }
    case gopt::v1::GraphInput::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "graph: set graph.graph (a gopt.v1.Graph) or graph.serialized (file "
      "bytes)");
}

absl::StatusOr<simulator::Topology> TopologyFromInput(
    const gopt::v1::TopologyInput& input, const EngineOptions& options) {
  switch (input.source_case()) {
    case gopt::v1::TopologyInput::kPreset: {
      for (const auto& [name, named] : options.named_topologies) {
        if (name == input.preset()) return named;
      }
      absl::StatusOr<simulator::Topology> topology =
          simulator::PresetTopology(input.preset());
      if (!topology.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("topology.preset: ", topology.status().message()));
      }
      return topology;
    }
    case gopt::v1::TopologyInput::kTopology: {
      absl::StatusOr<simulator::Topology> topology =
          simulator::TopologyFromProto(input.topology());
      if (!topology.ok()) {
        return Annotate(topology.status(), "topology.topology");
      }
      return topology;
    }
    case gopt::v1::TopologyInput::SOURCE_NOT_SET:
      if (!options.named_topologies.empty()) {
        return options.named_topologies.front().second;
      }
      break;
  }
  return absl::InvalidArgumentError(
      "topology: set topology.preset (e.g. v100x4-nvlink) or "
      "topology.topology");
}

// What priced a topology's kernels (OptimizeResponse.cost_model), and the
// warning for a request's own topology that names a runtime model: the
// engine reads no file a request names.
std::string CostModelName(const simulator::Topology& topology) {
  for (const simulator::DeviceProfile& device : topology.devices) {
    if (device.runtime_model != nullptr) {
      return absl::StrCat("learned:", topology.runtime_model_path);
    }
  }
  return "roofline";
}
std::vector<std::string> RuntimeModelWarnings(
    const simulator::Topology& topology) {
  if (topology.runtime_model_path.empty() ||
      CostModelName(topology) != "roofline") {
    return {};
  }
  return {absl::StrCat(
      "topology.runtime_model '", topology.runtime_model_path,
      "' is not loaded from a request: priced by the calibrated roofline "
      "(start gopt-server with --topology=FILE, or use the CLI without "
      "--server, to price with the learned model)")};
}

// A plan that may be the answer.
struct Candidate {
  Plan plan;
  std::string method;  // what the response calls it
  double step_time_s = 0;
};

// One Optimize request from start to answer. Not thread-safe; one per call.
class OptimizeRun {
 public:
  OptimizeRun(const EngineOptions& options,
              const graph::ImporterRegistry& importers,
              const simulator::baselines::BaselineRegistry& baselines,
              const simulator::OpCostModel& cost_model,
              const PolicyRegistry* policies, PolicyTimeEstimates* policy_times,
              const OptimizeRequest& request, const RequestContext& context,
              engine::PlanCacheRequest* store)
      : options_(options),
        importers_(importers),
        baselines_(baselines),
        cost_model_(cost_model),
        policies_(policies),
        policy_times_(policy_times),
        request_(request),
        context_(context),
        start_(context.clock->Now()),
        work_deadline_(WorkDeadline(options, context.deadline, start_)),
        memory_(context.memory, WorkOf(request.budget()), /*trace=*/false),
        store_(store) {}

  absl::StatusOr<OptimizeResponse> Run();

 private:
  absl::Status CheckStop(absl::string_view stage) const {
    return StopStatus(context_, work_deadline_, stage);
  }

  void Progress(absl::string_view stage, int32_t step) const {
    if (!context_.on_progress) return;
    OptimizeProgress progress;
    progress.set_stage(std::string(stage));
    progress.set_step(step);
    if (best_.has_value()) {
      progress.set_best_step_time_s(best_->step_time_s);
      progress.set_best_method(best_->method);
    }
    progress.set_elapsed_s(SecondsSince(*context_.clock, start_));
    context_.on_progress(progress);
  }

  void AddTiming(absl::string_view stage, absl::Time since) {
    gopt::v1::StageTiming* timing = response_.add_timings();
    timing->set_stage(std::string(stage));
    timing->set_seconds(SecondsSince(*context_.clock, since));
  }

  // Keeps `candidate` when it fits in memory and beats the best so far.
  void Offer(Candidate candidate) {
    if (!UsableStepTime(candidate.step_time_s)) return;
    if (!best_.has_value() || candidate.step_time_s < best_->step_time_s) {
      best_ = std::move(candidate);
    }
  }

  // OptimizeOptions.reward = REWARD_MEASURED needs a worker pool, a
  // measurement cap in range and (once imported: graph_nodes >= 0) a graph
  // within options_.max_measured_reward_nodes. InvalidArgument naming the
  // field otherwise.
  absl::Status CheckMeasuredReward(int64_t graph_nodes) const;
  absl::Status Prepare();
  absl::Status RunBaselines();
  absl::Status RunPolicies();
  absl::Status RunPolicy(const policy::Policy& policy,
                         const policy::TaskSet& tasks);
  // OptimizeRequest.verify: measures the chosen plan, the default and the
  // best baseline on the workers and makes best_ the measured fastest.
  void Verify();
  // Called when CheckStop failed: DeadlineExceeded is turned into a partial
  // answer when allowed and a plan exists.
  absl::Status Stop(const absl::Status& stop);
  absl::StatusOr<OptimizeResponse> Finish();
  // Asks every loaded policy that chooses tile sizes for the fused kernels
  // of the answer's plan (response_.kernel_tiles); a policy that fails adds
  // a warning, never an error. Nothing once the work should stop.
  void AddKernelTiles();

  const EngineOptions& options_;
  const graph::ImporterRegistry& importers_;
  const simulator::baselines::BaselineRegistry& baselines_;
  const simulator::OpCostModel& cost_model_;
  const PolicyRegistry* policies_;
  PolicyTimeEstimates* policy_times_;
  const OptimizeRequest& request_;
  const RequestContext& context_;
  const absl::Time start_;
  const absl::Time work_deadline_;
  RequestMemory memory_;
  engine::PlanCacheRequest* const store_;

  policy::TaskSet tasks_;
  std::optional<graph::Graph> graph_;
  std::optional<simulator::Topology> topology_;
  std::optional<simulator::Simulator> simulator_;
  bool default_usable_ = false;  // simulated and fits in memory
  Plan default_plan_;
  std::optional<Candidate> best_;
  std::optional<Candidate> best_baseline_;  // for Verify
  bool partial_ = false;
  // The plan store's entry answers: no baselines, no policies.
  bool answered_from_store_ = false;
  OptimizeResponse response_;
};

absl::Status OptimizeRun::Prepare() {
  tasks_ = RequestedTasks(request_.tasks());
  const gopt::v1::Budget& budget = request_.budget();
  if (budget.fine_tune_steps() < 0 ||
      budget.fine_tune_steps() > options_.max_fine_tune_steps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "budget.fine_tune_steps must be in 0..", options_.max_fine_tune_steps,
        " (this server's --max_fine_tune_steps), got ",
        budget.fine_tune_steps()));
  }
  if (!(budget.seconds() >= 0) ||
      budget.seconds() == std::numeric_limits<double>::infinity()) {
    return absl::InvalidArgumentError(
        "budget.seconds must be a finite number >= 0");
  }
  if (!gopt::v1::Budget::Mode_IsValid(budget.mode())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "budget.mode ", budget.mode(),
        " is not one of MODE_UNSPECIFIED (0), ZERO_SHOT (1), FINE_TUNE (2), "
        "BASELINES_ONLY (3)"));
  }
  if (budget.mode() == gopt::v1::Budget::BASELINES_ONLY &&
      !request_.policy().name().empty()) {
    return absl::InvalidArgumentError(
        "policy.name is set but budget.mode is BASELINES_ONLY");
  }
  if (!request_.policy().version().empty() &&
      request_.policy().name().empty()) {
    return absl::InvalidArgumentError("policy.version needs policy.name");
  }
  if (request_.verify() < 0 || request_.verify() > kMaxVerify) {
    return absl::InvalidArgumentError(absl::StrCat(
        "verify must be in 0..", kMaxVerify, ", got ", request_.verify()));
  }
  RETURN_IF_ERROR(CheckMeasuredReward(/*graph_nodes=*/-1));

  const absl::Time import_start = context_.clock->Now();
  ASSIGN_OR_RETURN(graph::Graph graph,
                   ImportGraph(importers_, options_, request_.graph(),
                               request_.options(), &memory_));
  graph_.emplace(std::move(graph));
  AddTiming("import", import_start);
  RETURN_IF_ERROR(memory_.AfterImport(*graph_));
  RETURN_IF_ERROR(CheckMeasuredReward(graph_->num_nodes()));
  RETURN_IF_ERROR(CheckStop("the import"));
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   TopologyFromInput(request_.topology(), options_));
  topology_.emplace(std::move(topology));
  response_.set_cost_model(CostModelName(*topology_));
  for (const std::string& warning : RuntimeModelWarnings(*topology_)) {
    response_.add_warnings(warning);
  }
  for (const std::string& warning : graph_->warnings()) {
    response_.add_warnings(warning);
  }
  for (const std::string& warning :
       simulator::UnmetDeviceConstraints(*graph_, *topology_)) {
    response_.add_warnings(warning);
  }
  response_.set_graph_name(graph_->name());
  response_.set_num_nodes(graph_->num_nodes());
  response_.set_topology_name(topology_->name);

  const absl::Time default_start = context_.clock->Now();
  simulator_.emplace(*graph_, *topology_, cost_model_);
  response_.set_lower_bound_s(simulator_->LowerBound());
  response_.set_fits_in_memory_lower_bound_s(
      simulator_->FitsInMemoryLowerBound());
  default_plan_ = simulator::DefaultPlan(*graph_, *topology_);
  default_plan_.method = "default";
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  absl::StatusOr<SimulationResult> result =
      simulator_->Simulate(default_plan_, quick);
  response_.set_num_simulations(1);
  if (result.ok() && result->step_time_s == 0) return NoWorkError(*graph_);
  if (result.ok() && !UsableStepTime(result->step_time_s)) {
    return absl::InternalError(absl::StrCat("the default plan of graph '",
                                            graph_->name(), "' simulated to ",
                                            result->step_time_s, " s"));
  }
  if (result.ok()) {
    response_.set_default_step_time_s(result->step_time_s);
    response_.set_default_oom(result->oom);
    default_usable_ = !result->oom;
  } else {
    response_.add_warnings(absl::StrCat("the default plan is invalid here: ",
                                        result.status().message()));
  }
  AddTiming("default", default_start);
  // The plan store: a stored plan answers or joins the candidates.
  if (std::optional<engine::StoredPlan> stored = store_->AfterImport(
          *graph_, *topology_, TasksToProto(tasks_), *simulator_, &response_)) {
    answered_from_store_ = stored->answers;
    Offer(Candidate{std::move(stored->plan), stored->method,
                    stored->step_time_s});
  }
  Progress("import", 0);
  return absl::OkStatus();
}

absl::Status OptimizeRun::RunBaselines() {
  const absl::Time baselines_start = context_.clock->Now();
  std::vector<std::string> methods;
  for (const std::string& method : request_.options().baseline_methods()) {
    if (std::find(methods.begin(), methods.end(), method) != methods.end()) {
      continue;
    }
    if (static_cast<int64_t>(methods.size()) >= options_.max_baseline_methods) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.baseline_methods: more than ", options_.max_baseline_methods,
          " distinct methods (this server's --max_baseline_methods)"));
    }
    methods.push_back(method);
  }
  if (methods.empty()) methods = BaselineMethodsFor(baselines_, tasks_);
  BaselineComparisonOptions comparison_options;
  comparison_options.methods = std::move(methods);
  comparison_options.check_stop = [this] { return CheckStop("the baselines"); };
  comparison_options.on_group =
      [this](int groups_done,
             const std::optional<BaselineGroupWinner>& winner) {
        if (winner.has_value()) {
          Candidate candidate{
              winner->plan, absl::StrCat("best-baseline:", winner->plan.method),
              winner->step_time_s};
          if (winner->best_so_far && UsableStepTime(winner->step_time_s)) {
            best_baseline_ = candidate;
          }
          Offer(std::move(candidate));
        }
        Progress("baselines", groups_done);
      };
  const simulator::baselines::BaselineContext baseline_context{
      *graph_, *topology_, cost_model_, request_.options().seed()};
  absl::StatusOr<BaselineComparison> comparison = CompareBaselines(
      baselines_, baseline_context, *simulator_, comparison_options);
  if (!comparison.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.baseline_methods: ", comparison.status().message()));
  }
  for (const simulator::baselines::BaselineTrial& trial : comparison->rows) {
    gopt::v1::MethodResult* row = response_.add_baselines();
    row->set_method(trial.method);
    row->set_valid(trial.valid);
    row->set_error(trial.error);
    row->set_step_time_s(trial.step_time_s);
    row->set_oom(trial.oom);
  }
  response_.set_num_simulations(response_.num_simulations() +
                                comparison->num_simulations);
  AddTiming("baselines", baselines_start);
  if (!comparison->stopped.ok()) return Stop(comparison->stopped);
  response_.set_best_baseline_method(comparison->best_method);
  response_.set_best_baseline_step_time_s(comparison->best_step_time_s);
  return absl::OkStatus();
}

absl::Status OptimizeRun::RunPolicies() {
  if (request_.budget().mode() == gopt::v1::Budget::BASELINES_ONLY) {
    return absl::OkStatus();
  }
  std::vector<const policy::Policy*> selected;
  if (!request_.policy().name().empty()) {
    if (policies_ == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          "unknown policy '", request_.policy().name(), "'; loaded: none"));
    }
    ASSIGN_OR_RETURN(
        const policy::Policy* policy,
        policies_->Find(request_.policy().name(), request_.policy().version()));
    if (Empty(Intersect(policy->info().tasks, tasks_))) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy '", policy->info().name, "' decides ",
                       TaskSetName(policy->info().tasks),
                       " but the request asks for ", TaskSetName(tasks_)));
    }
    selected.push_back(policy);
  } else if (policies_ != nullptr) {
    for (const policy::Policy* policy : policies_->latest_policies()) {
      if (!Empty(Intersect(policy->info().tasks, tasks_))) {
        selected.push_back(policy);
      }
    }
    // Placement deciders first: the others refine the best plan so far.
    std::stable_sort(selected.begin(), selected.end(),
                     [](const policy::Policy* a, const policy::Policy* b) {
                       return a->info().tasks.placement &&
                              !b->info().tasks.placement;
                     });
  }
  if (selected.empty()) {
    response_.add_warnings(
        absl::StrCat("no policy for ", TaskSetName(tasks_),
                     " is loaded: answering with the best baseline plan"));
    return absl::OkStatus();
  }
  for (const policy::Policy* policy : selected) {
    if (absl::Status stop =
            CheckStop(absl::StrCat("policy '", policy->info().name, "'"));
        !stop.ok()) {
      return Stop(stop);
    }
    RETURN_IF_ERROR(
        RunPolicy(*policy, Intersect(policy->info().tasks, tasks_)));
    if (partial_) break;
  }
  return absl::OkStatus();
}

absl::Status OptimizeRun::CheckMeasuredReward(int64_t graph_nodes) const {
  const gopt::v1::OptimizeOptions& options = request_.options();
  if (options.reward() == gopt::v1::OptimizeOptions::REWARD_SIMULATED) {
    return absl::OkStatus();
  }
  if (options.reward() != gopt::v1::OptimizeOptions::REWARD_MEASURED) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.reward = ", options.reward(),
                     ": expected REWARD_SIMULATED (0) or REWARD_MEASURED (1)"));
  }
  if (options_.measurer == nullptr) {
    return absl::InvalidArgumentError(
        "options.reward = REWARD_MEASURED, but this server has no worker "
        "pool to measure plans on (gopt-server --workers)");
  }
  if (options.max_reward_measurements() < 0 ||
      options.max_reward_measurements() > kMaxRewardMeasurements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_reward_measurements must be in 0..",
        kMaxRewardMeasurements, ", got ", options.max_reward_measurements()));
  }
  if (graph_nodes > options_.max_measured_reward_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.reward = REWARD_MEASURED: the graph has ", graph_nodes,
        " nodes; measured rewards are for graphs of at most ",
        options_.max_measured_reward_nodes,
        " nodes (each fine-tuning step runs its sampled plans for real); use "
        "REWARD_SIMULATED"));
  }
  return absl::OkStatus();
}

absl::Status OptimizeRun::RunPolicy(const policy::Policy& policy,
                                    const policy::TaskSet& tasks) {
  const std::string& name = policy.info().name;
  const std::string stage = absl::StrCat("policy:", name);
  const gopt::v1::Budget& budget = request_.budget();
  policy::ProposeOptions propose;
  propose.tasks = tasks;
  propose.base_plan = best_.has_value() ? &best_->plan : nullptr;
  propose.warm_start = propose.base_plan;
  // FINE_TUNE with neither steps nor seconds gets the engine's own budget
  // rather than the rest of the server's default deadline.
  const bool default_fine_tune = budget.mode() == gopt::v1::Budget::FINE_TUNE &&
                                 budget.fine_tune_steps() == 0 &&
                                 budget.seconds() == 0;
  if (budget.mode() == gopt::v1::Budget::FINE_TUNE) {
    propose.fine_tune_steps =
        budget.fine_tune_steps() > 0 ? budget.fine_tune_steps()
        : default_fine_tune          ? options_.default_fine_tune_steps
                                     : std::numeric_limits<int32_t>::max();
  }
  propose.deadline = work_deadline_;
  propose.stop_at_step_time_s =
      request_.options().stop_within_lower_bound() * response_.lower_bound_s();
  const double budget_seconds =
      default_fine_tune ? options_.default_fine_tune_seconds : budget.seconds();
  if (budget_seconds > 0) {
    propose.deadline =
        std::min(propose.deadline, start_ + absl::Seconds(budget_seconds));
  }
  propose.num_samples = options_.policy_samples;
  propose.seed = request_.options().seed();
  propose.cancelled = context_.cancelled;
  propose.clock = context_.clock;
  if (request_.options().reward() ==
      gopt::v1::OptimizeOptions::REWARD_MEASURED) {
    const absl::Time measure_deadline = propose.deadline;
    propose.measure_plan =
        [this, measure_deadline](
            const simulator::Plan& plan) -> absl::StatusOr<double> {
      ASSIGN_OR_RETURN(
          PlanMeasurement measured,
          options_.measurer->Measure(*graph_, plan, measure_deadline,
                                     context_.cancelled));
      return measured.measured_step_time_s;
    };
    propose.measured_reward_max_graph_nodes =
        options_.max_measured_reward_nodes;
    propose.measured_reward_max_measurements =
        request_.options().max_reward_measurements() > 0
            ? request_.options().max_reward_measurements()
            : kDefaultRewardMeasurements;
  }
  if (context_.on_progress) {
    propose.on_progress = [this, &stage,
                           &name](const policy::ProposeProgress& p) {
      OptimizeProgress progress;
      progress.set_stage(absl::StrCat(stage, ":", p.stage));
      progress.set_step(p.step);
      progress.set_best_step_time_s(
          best_.has_value() ? std::min(best_->step_time_s, p.best_step_time_s)
                            : p.best_step_time_s);
      progress.set_best_method(best_.has_value() &&
                                       best_->step_time_s <= p.best_step_time_s
                                   ? best_->method
                                   : name);
      progress.set_elapsed_s(SecondsSince(*context_.clock, start_));
      context_.on_progress(progress);
    };
  }

  const double expected_s =
      policy_times_->ZeroShotSeconds(name, graph_->num_nodes());
  if (work_deadline_ - context_.clock->Now() < absl::Seconds(expected_s)) {
    return Stop(absl::DeadlineExceededError(
        absl::StrCat("the deadline leaves less time than policy '", name,
                     "' needs for a zero-shot pass on ", graph_->num_nodes(),
                     " nodes (", expected_s, " s, from its last pass)")));
  }
  const absl::Time policy_start = context_.clock->Now();
  absl::StatusOr<policy::Proposal> proposal =
      policy.Propose(*simulator_, propose);
  AddTiming(stage, policy_start);
  if (proposal.ok()) {
    policy_times_->RecordZeroShot(
        name, graph_->num_nodes(),
        propose.fine_tune_steps == 0
            ? SecondsSince(*context_.clock, policy_start)
            : proposal->inference_s);
  }
  gopt::v1::MethodResult* row = response_.add_policy_results();
  row->set_method(name);
  row->set_version(policy.info().version);
  if (!proposal.ok()) {
    row->set_error(std::string(proposal.status().message()));
    if (context_.cancelled != nullptr && context_.cancelled->load()) {
      return absl::CancelledError(
          absl::StrCat("the client cancelled the request (", stage, ")"));
    }
    if (absl::Status stop = CheckStop(stage); !stop.ok()) return Stop(stop);
    response_.add_warnings(absl::StrCat(
        "policy '", name, "' gave no plan: ", proposal.status().message()));
    return absl::OkStatus();
  }
  row->set_zero_shot_decode(proposal->zero_shot_decode);
  response_.set_policy_inference_seconds(response_.policy_inference_seconds() +
                                         proposal->inference_s);
  for (const std::string& warning : proposal->warnings) {
    response_.add_warnings(absl::StrCat("policy '", name, "': ", warning));
  }
  // Scored again here: the answer's numbers all come from one simulator.
  Plan plan = std::move(proposal->plan);
  if (plan.method.empty()) plan.method = name;
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  absl::StatusOr<SimulationResult> result = simulator_->Simulate(plan, quick);
  response_.set_num_simulations(response_.num_simulations() + 1);
  if (!result.ok()) {
    row->set_error(std::string(result.status().message()));
    response_.add_warnings(absl::StrCat(
        "policy '", name,
        "' proposed an invalid plan: ", result.status().message()));
    return absl::OkStatus();
  }
  SetSimulated(*result, row);
  if (!result->oom)
    Offer(Candidate{std::move(plan), name, result->step_time_s});
  if (absl::Status stop = CheckStop(stage); !stop.ok()) return Stop(stop);
  return absl::OkStatus();
}

absl::Status OptimizeRun::Stop(const absl::Status& stop) {
  if (stop.code() == absl::StatusCode::kDeadlineExceeded &&
      request_.allow_partial_result() && best_.has_value()) {
    partial_ = true;
    response_.add_warnings(absl::StrCat(
        stop.message(), ": answering with the best plan found so far"));
    return absl::OkStatus();
  }
  return stop;
}

absl::StatusOr<OptimizeResponse> OptimizeRun::Run() {
  RETURN_IF_ERROR(Prepare());
  if (answered_from_store_) return Finish();
  RETURN_IF_ERROR(RunBaselines());
  if (!partial_) RETURN_IF_ERROR(RunPolicies());
  return Finish();
}

absl::StatusOr<OptimizeResponse> OptimizeRun::Finish() {
  // Never slower than the framework default.
  if (default_usable_ &&
      (!best_.has_value() ||
       response_.default_step_time_s() < best_->step_time_s)) {
    best_ =
        Candidate{default_plan_, "default", response_.default_step_time_s()};
  }
  if (!best_.has_value()) {
    int oom = 0;
    int failed = 0;
    std::string first_error;
    for (const gopt::v1::MethodResult& row : response_.baselines()) {
      if (row.valid()) {
        ++oom;
      } else if (++failed == 1) {
        first_error =
            absl::StrCat("; first failure: ", row.method(), ": ", row.error());
      }
    }
    return absl::FailedPreconditionError(
        absl::StrCat("no plan for graph '", graph_->name(),
                     "' fits in memory on topology '", topology_->name, "' (",
                     response_.baselines_size(), " baseline methods: ", oom,
                     " out of memory, ", failed, " failed", first_error, ")"));
  }
  if (request_.verify() > 0) Verify();
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  ASSIGN_OR_RETURN(SimulationResult result,
                   simulator_->Simulate(best_->plan, quick));
  response_.set_num_simulations(response_.num_simulations() + 1);
  if (!UsableStepTime(result.step_time_s)) {
    return absl::InternalError(absl::StrCat("the chosen plan (", best_->method,
                                            ") simulated to ",
                                            result.step_time_s, " s"));
  }
  *response_.mutable_plan() = simulator::PlanToProto(best_->plan);
  response_.set_method(best_->method);
  response_.set_step_time_s(result.step_time_s);
  response_.set_ratio_to_lower_bound(
      RatioOrZero(result.step_time_s, response_.lower_bound_s()));
  for (int64_t bytes : result.peak_memory_bytes) {
    response_.add_peak_memory_bytes(bytes);
  }
  if (default_usable_) {
    response_.set_speedup_over_default(response_.default_step_time_s() /
                                       result.step_time_s);
  }
  AddKernelTiles();
  RETURN_IF_ERROR(AddDecisions(request_, importers_, *graph_, *topology_,
                               options_.max_response_bytes, &response_));
  response_.set_partial(partial_);
  store_->AfterAnswer(&response_);
  gopt::v1::StageTiming* total = response_.add_timings();
  total->set_stage("total");
  total->set_seconds(SecondsSince(*context_.clock, start_));
  return std::move(response_);
}

void OptimizeRun::Verify() {
  const absl::Time verify_start = context_.clock->Now();
  std::vector<VerifyCandidate> candidates;
  candidates.push_back({best_->plan, best_->method, best_->step_time_s});
  if (default_usable_) {
    candidates.push_back(
        {default_plan_, "default", response_.default_step_time_s()});
  }
  if (best_baseline_.has_value()) {
    candidates.push_back({best_baseline_->plan, best_baseline_->method,
                          best_baseline_->step_time_s});
  }
  const int chosen = VerifyCandidates(
      options_.measurer.get(), *graph_, candidates, request_.verify(),
      work_deadline_, context_.cancelled, &response_);
  if (chosen != 0) {
    best_ = Candidate{candidates[chosen].plan, candidates[chosen].method,
                      candidates[chosen].predicted_step_time_s};
  }
  AddTiming("verify", verify_start);
}

void OptimizeRun::AddKernelTiles() {
  if (policies_ == nullptr || best_->plan.fusion_group.empty() ||
      request_.budget().mode() == gopt::v1::Budget::BASELINES_ONLY ||
      !CheckStop("tile sizes").ok()) {
    return;
  }
  for (const policy::Policy* policy : policies_->policies()) {
    const absl::Time tile_start = context_.clock->Now();
    absl::StatusOr<std::vector<policy::KernelTile>> tiles =
        policy->ProposeKernelTiles(*simulator_, best_->plan);
    if (absl::IsUnimplemented(tiles.status())) continue;
    const std::string& name = policy->info().name;
    AddTiming(absl::StrCat("tiles:", name), tile_start);
    if (!tiles.ok()) {
      response_.add_warnings(
          absl::StrCat("policy '", name,
                       "' chose no tile sizes: ", tiles.status().message()));
      continue;
    }
    for (const policy::KernelTile& tile : *tiles) {
      gopt::v1::KernelTile* proto = response_.add_kernel_tiles();
      proto->set_fusion_group(tile.fusion_group);
      proto->mutable_nodes()->Add(tile.nodes.begin(), tile.nodes.end());
      proto->mutable_output_tile()->Add(tile.output_tile.begin(),
                                        tile.output_tile.end());
      proto->mutable_default_output_tile()->Add(
          tile.default_output_tile.begin(), tile.default_output_tile.end());
      proto->set_predicted_gain_over_default(tile.predicted_gain_over_default);
      proto->set_candidates_scored(tile.candidates_scored);
      proto->set_policy(name);
    }
  }
}

}  // namespace

namespace {

// Powers of two of the node count: a pass's fixed cost dominates on small
// graphs, so its per-node rate differs by size.
int SizeClass(int64_t num_nodes) {
  int size_class = 0;
  while (num_nodes > 1 && size_class < 62) {
    num_nodes >>= 1;
    ++size_class;
  }
  return size_class;
}

}  // namespace

double PolicyTimeEstimates::ZeroShotSeconds(const std::string& policy,
                                            int64_t num_nodes) const {
  absl::MutexLock lock(&mutex_);
  const auto rates = seconds_per_node_.find(policy);
  if (rates == seconds_per_node_.end() || rates->second.empty()) return 0;
  // The nearest size class seen (the larger one on a tie: its lower rate
  // never skips a pass that would have fit).
  const int size_class = SizeClass(num_nodes);
  auto nearest = rates->second.lower_bound(size_class);
  if (nearest == rates->second.end() ||
      (nearest != rates->second.begin() &&
       size_class - std::prev(nearest)->first < nearest->first - size_class)) {
    nearest = std::prev(nearest);
  }
  return nearest->second * static_cast<double>(std::max<int64_t>(num_nodes, 1));
}

void PolicyTimeEstimates::RecordZeroShot(const std::string& policy,
                                         int64_t num_nodes, double seconds) {
  absl::MutexLock lock(&mutex_);
  seconds_per_node_[policy][SizeClass(num_nodes)] =
      seconds / static_cast<double>(std::max<int64_t>(num_nodes, 1));
}

policy::TaskSet RequestedTasks(const gopt::v1::Tasks& tasks) {
  policy::TaskSet result;
  if (!tasks.placement() && !tasks.scheduling() && !tasks.fusion() &&
      !tasks.layout()) {
    return result;
  }
  result.placement = tasks.placement();
  result.scheduling = tasks.scheduling();
  result.fusion = tasks.fusion();
  result.layout = tasks.layout();
  return result;
}

Engine::Engine(const EngineOptions& options,
               std::shared_ptr<const PolicyRegistry> policies)
    : options_(options),
      policies_(std::move(policies)),
      plan_cache_(options.plan_store, options.plan_store_kept_answers,
                  options.plan_store_kept_answer_bytes) {
  graph::RegisterBuiltinImporters(&importers_);
  simulator::baselines::RegisterBuiltinBaselines(&baselines_);
}

absl::StatusOr<OptimizeResponse> Engine::Optimize(
    const OptimizeRequest& request, const RequestContext& context) const {
  engine::PlanCacheRequest store(&plan_cache_, request, *context.clock);
  if (std::optional<SerializedResponse> kept = store.AnswerBeforeImport()) {
    return Parse(*kept);
  }
  OptimizeRun run(options_, importers_, baselines_, cost_model_,
                  policies_.get(), &policy_times_, request, context, &store);
  return run.Run();
}

absl::StatusOr<SerializedResponse> Engine::OptimizeSerialized(
    const OptimizeRequest& request, const RequestContext& context) const {
  engine::PlanCacheRequest store(&plan_cache_, request, *context.clock);
  if (std::optional<SerializedResponse> kept = store.AnswerBeforeImport()) {
    return *std::move(kept);
  }
  OptimizeRun run(options_, importers_, baselines_, cost_model_,
                  policies_.get(), &policy_times_, request, context, &store);
  ASSIGN_OR_RETURN(OptimizeResponse response, run.Run());
  return Serialize(std::move(response));
}

absl::StatusOr<EvaluateResponse> Engine::Evaluate(
    const EvaluateRequest& request, const RequestContext& context) const {
  // Evaluate has no partial answer: every stage checks the deadline and the
  // client's cancellation, and stops.
  const absl::Time work_deadline =
      WorkDeadline(options_, context.deadline, context.clock->Now());
  const auto check_stop = [&](absl::string_view stage) {
    return StopStatus(context, work_deadline, stage);
  };
  RequestMemory memory(context.memory, RequestWork::kBaselines,
                       request.include_trace());
  ASSIGN_OR_RETURN(const graph::Graph graph,
                   ImportGraph(importers_, options_, request.graph(),
                               request.options(), &memory));
  RETURN_IF_ERROR(memory.AfterImport(graph));
  ASSIGN_OR_RETURN(const simulator::Topology topology,
                   TopologyFromInput(request.topology(), options_));
  if (request.include_trace() &&
      graph.num_nodes() > options_.max_trace_bytes / kTraceJsonBytesPerNode) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "include_trace: a trace of graph '", graph.name(), "' (",
        graph.num_nodes(), " nodes) would take about ",
        graph.num_nodes() * kTraceJsonBytesPerNode / (1 << 20),
        " MiB; this server sends traces of at most ",
        options_.max_trace_bytes / (1 << 20), " MiB (about ",
        options_.max_trace_bytes / kTraceJsonBytesPerNode,
        " nodes); evaluate without a trace, or use `gopt evaluate` locally"));
  }
  RETURN_IF_ERROR(check_stop("the import"));
  const Plan plan = simulator::PlanFromProto(request.plan());
  RETURN_IF_ERROR(
      Annotate(simulator::ValidatePlan(plan, graph, topology), "plan"));
  const simulator::Simulator simulator(graph, topology, cost_model_);
  simulator::SimulationOptions simulation;
  simulation.record_timeline = request.include_trace();
  absl::StatusOr<SimulationResult> result =
      simulator.Simulate(plan, simulation);
  if (!result.ok()) return Annotate(result.status(), "plan");
  if (result->step_time_s == 0) return NoWorkError(graph);
  if (!UsableStepTime(result->step_time_s)) {
    return absl::InternalError(
        absl::StrCat("the plan simulated to ", result->step_time_s, " s"));
  }
  RETURN_IF_ERROR(check_stop("the simulation"));

  EvaluateResponse response;
  response.set_graph_name(graph.name());
  response.set_num_nodes(graph.num_nodes());
  response.set_cost_model(CostModelName(topology));
  for (const std::string& warning : RuntimeModelWarnings(topology)) {
    response.add_warnings(warning);
  }
  for (const std::string& warning : graph.warnings()) {
    response.add_warnings(warning);
  }
  for (const std::string& warning :
       simulator::UnmetDeviceConstraints(graph, topology)) {
    response.add_warnings(warning);
  }
  response.set_step_time_s(result->step_time_s);
  response.set_oom(result->oom);
  response.set_lower_bound_s(simulator.LowerBound());
  for (int64_t bytes : result->peak_memory_bytes) {
    response.add_peak_memory_bytes(bytes);
  }
  for (double busy : result->device_busy_s) response.add_device_busy_s(busy);
  response.set_bytes_moved(result->bytes_moved);
  response.set_num_transfers(result->num_transfers);
  response.set_num_kernels(result->num_kernels);
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  absl::StatusOr<SimulationResult> default_result =
      simulator.Simulate(simulator::DefaultPlan(graph, topology), quick);
  if (default_result.ok() && UsableStepTime(default_result->step_time_s)) {
    response.set_default_step_time_s(default_result->step_time_s);
  }
  if (request.measure()) {
    MeasureForEvaluate(options_.measurer.get(), graph, plan, work_deadline,
                       context.cancelled, &response);
  }
  if (request.include_trace()) {
    RETURN_IF_ERROR(check_stop("the default plan's simulation"));
    std::string trace =
        simulator::ChromeTrace(graph, topology, plan, *result).dump();
    if (static_cast<int64_t>(trace.size()) > options_.max_trace_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "include_trace: the trace of graph '", graph.name(), "' is ",
          trace.size() / (1 << 20), " MiB; this server sends at most ",
          options_.max_trace_bytes / (1 << 20), " MiB"));
    }
    RETURN_IF_ERROR(check_stop("the trace"));
    response.set_chrome_trace_json(std::move(trace));
  }
  return response;
}

gopt::v1::ListPoliciesResponse Engine::ListPolicies() const {
  gopt::v1::ListPoliciesResponse response;
  if (policies_ == nullptr) return response;
  for (const policy::Policy* policy : policies_->policies()) {
    const policy::PolicyInfo& info = policy->info();
    gopt::v1::PolicyInfo* proto = response.add_policies();
    proto->set_name(info.name);
    proto->set_version(info.version);
    proto->set_kind(info.kind);
    *proto->mutable_tasks() = TasksToProto(info.tasks);
    proto->set_card_json(info.card.dump());
  }
  return response;
}

}  // namespace gopt::engine
