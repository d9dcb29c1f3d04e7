#include "client/remote_commands.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/apply.h"
#include "client/load_generator.h"
#include "client/measure.h"
#include "client/optimize_report.h"
#include "client/optimizer_client.h"
#include "client/plans.h"
#include "engine/builtin_policies.h"
#include "engine/engine.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

absl::StatusOr<std::unique_ptr<OptimizerClient>> Connect(
    const RemoteOptions& options, int max_attempts) {
  if (options.server.empty()) {
    return absl::InvalidArgumentError("expected --server=HOST:PORT");
  }
  ClientOptions client;
  client.target = options.server;
  client.timeout = absl::Seconds(options.timeout_seconds);
  client.max_attempts = max_attempts;
  client.tls_ca_file = options.tls_ca;
  client.tls_cert_file = options.tls_cert;
  client.tls_key_file = options.tls_key;
  client.tls_server_name_override = options.tls_server_name;
  return OptimizerClient::Connect(client);
}

bool IsPresetName(const std::string& topology) {
  const std::vector<std::string> presets = simulator::PresetTopologyNames();
  return std::find(presets.begin(), presets.end(), topology) != presets.end();
}

// The topology as a request field: a preset name, or a JSON file's
// contents.
absl::StatusOr<gopt::v1::TopologyInput> TopologyInput(
    const std::string& topology) {
  gopt::v1::TopologyInput input;
  if (IsPresetName(topology)) {
    input.set_preset(topology);
    return input;
  }
  ASSIGN_OR_RETURN(simulator::Topology loaded,
                   simulator::LoadTopology(topology));
  *input.mutable_topology() = simulator::TopologyToProto(loaded);
  return input;
}

gopt::v1::OptimizeOptions RequestOptions(
    const GraphReadOptions& read, uint64_t seed,
    const std::vector<std::string>& methods) {
  gopt::v1::OptimizeOptions options;
  for (const auto& [name, value] : read.import.symbolic_dims) {
    (*options.mutable_symbolic_dims())[name] = value;
  }
  options.set_default_dim(read.import.default_symbolic_dim);
  options.set_seed(seed);
  for (const std::string& method : methods) {
    options.add_baseline_methods(method);
  }
  return options;
}

void PrintProgress(const gopt::v1::OptimizeProgress& progress) {
  std::cerr << absl::StrFormat("[%6.2f s] %s step %d: best %s %.3f ms\n",
                               progress.elapsed_s(), progress.stage(),
                               progress.step(), progress.best_method(),
                               progress.best_step_time_s() * 1e3);
}

// Runs an Optimize or Evaluate remotely (RemoteOptions::server) or on an
// in-process engine.
class Backend {
 public:
  // `load_policies`: the in-process engine loads `policy_dir` (else it
  // answers with baselines alone); `workers` non-empty: it measures plans
  // there (MakeCliMeasurer).
  static absl::StatusOr<Backend> Make(const RemoteOptions& remote,
                                      const std::string& policy_dir,
                                      bool load_policies,
                                      int64_t max_graph_nodes,
                                      const std::string& workers = "",
                                      const std::string& plan_store = "none",
                                      const std::string& topology = "") {
    Backend backend;
    if (!remote.server.empty()) {
      ASSIGN_OR_RETURN(backend.client_, Connect(remote, /*max_attempts=*/3));
      return backend;
    }
    engine::EngineOptions options;
    options.max_graph_nodes = max_graph_nodes;
    // A topology file is served with its learned runtime model (a request
    // sent to a server carries the topology's numbers only).
    if (!topology.empty() && !IsPresetName(topology)) {
      ASSIGN_OR_RETURN(simulator::Topology loaded,
                       simulator::LoadTopology(topology));
      options.named_topologies = {{topology, std::move(loaded)}};
      backend.local_topology_ = topology;
    }
    std::shared_ptr<const engine::PolicyRegistry> policies;
    if (load_policies) {
      ASSIGN_OR_RETURN(policies, engine::LoadBuiltinPolicies(policy_dir));
    }
    if (!workers.empty()) {
      ASSIGN_OR_RETURN(options.measurer, MakeCliMeasurer(workers));
    }
    absl::StatusOr<std::shared_ptr<engine::PlanStore>> store =
        OpenCliPlanStore(plan_store);
    if (store.ok()) {
      options.plan_store = *std::move(store);
    } else {
      std::cerr << "gopt: warning: " << store.status().message()
                << "; optimizing without a plan store\n";
    }
    backend.engine_ =
        std::make_shared<engine::Engine>(options, std::move(policies));
    return backend;
  }

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const gopt::v1::OptimizeRequest& given, bool progress) const {
    if (engine_ != nullptr) {
      gopt::v1::OptimizeRequest request = given;
      if (!local_topology_.empty()) {
        request.mutable_topology()->set_preset(local_topology_);
      }
      engine::RequestContext context;
      if (progress) context.on_progress = PrintProgress;
      return engine_->Optimize(request, context);
    }
    if (progress) return client_->OptimizeStream(given, PrintProgress);
    return client_->Optimize(given);
  }

  absl::StatusOr<gopt::v1::EvaluateResponse> Evaluate(
      const gopt::v1::EvaluateRequest& request) const {
    if (engine_ != nullptr) {
      if (local_topology_.empty()) return engine_->Evaluate(request, {});
      gopt::v1::EvaluateRequest named = request;
      named.mutable_topology()->set_preset(local_topology_);
      return engine_->Evaluate(named, {});
    }
    return client_->Evaluate(request);
  }

 private:
  // The local engine's --topology file (named in every request), or "".
  std::string local_topology_;
  std::shared_ptr<const engine::Engine> engine_;
  std::shared_ptr<const OptimizerClient> client_;
};

// optimize --trace: the chosen plan simulated with its timeline.
absl::Status WriteTrace(const Backend& backend,
                        const gopt::v1::OptimizeRequest& request,
                        const gopt::v1::Plan& plan, const std::string& path) {
  gopt::v1::EvaluateRequest evaluate;
  *evaluate.mutable_graph() = request.graph();
  *evaluate.mutable_topology() = request.topology();
  *evaluate.mutable_plan() = plan;
  *evaluate.mutable_options() = request.options();
  evaluate.set_include_trace(true);
  ASSIGN_OR_RETURN(gopt::v1::EvaluateResponse response,
                   backend.Evaluate(evaluate));
  return WriteFileBytes(path, response.chrome_trace_json());
}

absl::Status SetTask(const std::string& task, gopt::v1::Tasks* tasks) {
  if (task == "placement") {
    tasks->set_placement(true);
  } else if (task == "scheduling") {
    tasks->set_scheduling(true);
  } else if (task == "fusion") {
    tasks->set_fusion(true);
  } else if (task == "layout") {
    tasks->set_layout(true);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--tasks: unknown task '", task,
                     "'; known: placement, scheduling, fusion, layout"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<gopt::v1::OptimizeRequest> MakeOptimizeRequest(
    const OptimizeRequestOptions& options) {
  gopt::v1::OptimizeRequest request;
  ASSIGN_OR_RETURN(*request.mutable_graph(),
                   GraphInputFromFile(options.path, options.read.format));
  ASSIGN_OR_RETURN(*request.mutable_topology(),
                   TopologyInput(options.topology));
  for (const std::string& task : options.tasks) {
    RETURN_IF_ERROR(SetTask(task, request.mutable_tasks()));
  }
  const size_t at = options.policy.find('@');
  request.mutable_policy()->set_name(options.policy.substr(0, at));
  if (at != std::string::npos) {
    request.mutable_policy()->set_version(options.policy.substr(at + 1));
  }
  gopt::v1::Budget* budget = request.mutable_budget();
  budget->set_seconds(options.budget_seconds);
  if (options.baselines_only) {
    budget->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  } else if (options.fine_tune_steps > 0) {
    budget->set_mode(gopt::v1::Budget::FINE_TUNE);
    budget->set_fine_tune_steps(options.fine_tune_steps);
  } else {
    budget->set_mode(gopt::v1::Budget::ZERO_SHOT);
  }
  request.set_allow_partial_result(options.allow_partial);
  request.set_verify(options.verify);
  *request.mutable_options() =
      RequestOptions(options.read, options.seed, options.baseline_methods);
  request.mutable_options()->set_stop_within_lower_bound(
      options.stop_within_bound);
  if (options.reward == "measured") {
    request.mutable_options()->set_reward(
        gopt::v1::OptimizeOptions::REWARD_MEASURED);
  } else if (options.reward != "simulated") {
    return absl::InvalidArgumentError(
        absl::StrCat("--reward: expected simulated or measured, got '",
                     options.reward, "'"));
  }
  request.mutable_options()->set_max_reward_measurements(
      options.max_reward_measurements);
  gopt::v1::OptimizeRequest::StoreMode store;
  std::string store_name = absl::AsciiStrToUpper(options.store);
  if (!gopt::v1::OptimizeRequest::StoreMode_Parse(store_name, &store)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store: expected default, skip, read_only or refresh, got '",
        options.store, "'"));
  }
  request.set_store(store);
  return request;
}

absl::Status RunOptimize(const OptimizeOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(gopt::v1::OptimizeRequest request,
                   MakeOptimizeRequest(options.request));
  request.set_return_graph(!options.write_path.empty());
  request.set_schedule_as(options.schedule_as);
  ASSIGN_OR_RETURN(
      Backend backend,
      Backend::Make(
          options.remote, options.policy_dir, !options.request.baselines_only,
          options.request.read.import.limits.max_nodes,
          options.request.verify > 0 || options.request.reward == "measured"
              ? options.workers
              : "",
          options.plan_store, options.request.topology));
  ASSIGN_OR_RETURN(gopt::v1::OptimizeResponse response,
                   backend.Optimize(request, options.progress));
  if (!options.write_path.empty()) {
    RETURN_IF_ERROR(
        WriteFileBytes(options.write_path, response.optimized_graph()));
    response.clear_optimized_graph();
  }
  if (!options.out_path.empty()) {
    RETURN_IF_ERROR(
        WriteFileBytes(options.out_path, MessageToJson(response.plan())));
  }
  if (!options.trace_path.empty()) {
    RETURN_IF_ERROR(
        WriteTrace(backend, request, response.plan(), options.trace_path));
  }
  if (options.json) {
    out << MessageToJson(response) << "\n";
  } else {
    out << OptimizeResponseToText(response);
  }
  return absl::OkStatus();
}

absl::Status RunEvaluate(const EvaluateOptions& options, std::ostream& out) {
  simulator::Plan plan;
  if (options.plan_path.empty()) {
    ASSIGN_OR_RETURN(
        gopt::v1::Plan embedded,
        EmbeddedPlanOf(options.path, options.read, options.topology));
    plan = simulator::PlanFromProto(embedded);
  } else {
    ASSIGN_OR_RETURN(plan, simulator::LoadPlan(options.plan_path));
  }
  gopt::v1::EvaluateRequest request;
  ASSIGN_OR_RETURN(*request.mutable_graph(),
                   GraphInputFromFile(options.path, options.read.format));
  ASSIGN_OR_RETURN(*request.mutable_topology(),
                   TopologyInput(options.topology));
  *request.mutable_plan() = simulator::PlanToProto(plan);
  *request.mutable_options() =
      RequestOptions(options.read, options.seed, /*methods=*/{});
  request.set_include_trace(!options.trace_path.empty());
  ASSIGN_OR_RETURN(
      Backend backend,
      Backend::Make(options.remote, options.policy_dir,
                    /*load_policies=*/true,
                    options.read.import.limits.max_nodes,
                    /*workers=*/"", /*plan_store=*/"none", options.topology));
  ASSIGN_OR_RETURN(gopt::v1::EvaluateResponse response,
                   backend.Evaluate(request));
  if (request.include_trace()) {
    RETURN_IF_ERROR(
        WriteFileBytes(options.trace_path, response.chrome_trace_json()));
    response.clear_chrome_trace_json();
  }
  if (options.json) {
    out << MessageToJson(response) << "\n";
  } else {
    out << EvaluateResponseToText(response);
  }
  return absl::OkStatus();
}

absl::Status RunHealth(const HealthOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(std::unique_ptr<OptimizerClient> client,
                   Connect(options.remote, /*max_attempts=*/1));
  ASSIGN_OR_RETURN(grpc::health::v1::HealthCheckResponse::ServingStatus status,
                   client->Health());
  out << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(status)
      << "\n";
  if (status != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat(options.remote.server, " is not SERVING"));
  }
  return absl::OkStatus();
}

absl::Status RunPolicies(const PoliciesOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(std::unique_ptr<OptimizerClient> client,
                   Connect(options.remote, /*max_attempts=*/3));
  ASSIGN_OR_RETURN(gopt::v1::ListPoliciesResponse response,
                   client->ListPolicies());
  if (options.json) {
    out << MessageToJson(response) << "\n";
    return absl::OkStatus();
  }
  if (response.policies().empty()) {
    out << "no policies loaded: Optimize answers with the best baseline "
           "plan\n";
  }
  for (const gopt::v1::PolicyInfo& policy : response.policies()) {
    std::vector<std::string> tasks;
    if (policy.tasks().placement()) tasks.push_back("placement");
    if (policy.tasks().scheduling()) tasks.push_back("scheduling");
    if (policy.tasks().fusion()) tasks.push_back("fusion");
    if (policy.tasks().layout()) tasks.push_back("layout");
    out << policy.name() << "@" << policy.version() << "  kind "
        << policy.kind() << "  tasks " << absl::StrJoin(tasks, "+") << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunLoadCommand(const LoadCommandOptions& options,
                            std::ostream& out) {
  ASSIGN_OR_RETURN(gopt::v1::OptimizeRequest request,
                   MakeOptimizeRequest(options.request));
  // Every answer counts, UNAVAILABLE included: no retries.
  ASSIGN_OR_RETURN(std::unique_ptr<OptimizerClient> client,
                   Connect(options.remote, /*max_attempts=*/1));
  LoadOptions load;
  load.concurrency = options.concurrency;
  load.duration = absl::Seconds(options.duration_seconds);
  load.max_requests = options.max_requests;
  std::cerr << "load: " << load.concurrency << " in flight for "
            << load.duration << " against " << options.remote.server << "...\n";
  ASSIGN_OR_RETURN(LoadReport report, RunLoad(*client, request, load));
  if (options.json) {
    out << LoadReportToJson(report).dump(2) << "\n";
  } else {
    out << LoadReportToText(report);
  }
  if (report.ok != report.requests) {
    return absl::UnavailableError(absl::StrCat(report.requests - report.ok,
                                               " of ", report.requests,
                                               " requests failed"));
  }
  return absl::OkStatus();
}

}  // namespace gopt::client
