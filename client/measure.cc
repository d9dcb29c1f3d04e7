#include "client/measure.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/optimizer_client.h"
#include "engine/engine.h"
#include "engine/worker_pool.h"
#include "graph/import/builtin_importers.h"
#include "nlohmann/json.hpp"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"

namespace gopt::client {
namespace {

absl::StatusOr<simulator::Plan> MakePlan(const MeasureOptions& options,
                                         const graph::Graph& graph,
                                         const simulator::Topology& topology) {
  if (!options.plan_path.empty()) {
    absl::StatusOr<simulator::Plan> plan =
        simulator::LoadPlan(options.plan_path);
    if (plan.ok() && plan->method.empty()) plan->method = "plan file";
    return plan;
  }
  simulator::RooflineCostModel cost_model;
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  const simulator::baselines::BaselineContext context{graph, topology,
                                                      cost_model, options.seed};
  if (options.method == "best-baseline") {
    auto best = simulator::baselines::BestBaseline(registry, context);
    if (!best.ok()) return best.status();
    return best->plan;
  }
  return simulator::baselines::MakeBaselinePlan(registry, options.method,
                                                context);
}

// What MakeRequest resolved besides the request: the plan's method and,
// when the topology prices with a learned runtime model, the step time the
// calibrated roofline alone predicts for the same plan.
struct Resolved {
  std::string method;
  double roofline_step_time_s = 0;  // 0: no learned model
  simulator::Topology topology;
};

absl::StatusOr<gopt::v1::EvaluateRequest> MakeRequest(
    const MeasureOptions& options, Resolved* resolved) {
  std::string* method = &resolved->method;
  gopt::v1::EvaluateRequest request;
  const std::string& format = options.read.format;
  absl::StatusOr<gopt::v1::GraphInput> input =
      GraphInputFromFile(options.path, format == "auto" ? "" : format);
  if (!input.ok()) return input.status();
  *request.mutable_graph() = *std::move(input);
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  graph::ImportOptions import = options.read.import;
  import.source_name = request.graph().name();
  absl::StatusOr<graph::Graph> graph =
      importers.Import(request.graph().serialized(), format, import);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<simulator::Topology> topology =
      simulator::LoadTopology(options.topology);
  if (!topology.ok()) return topology.status();
  absl::StatusOr<simulator::Plan> plan = MakePlan(options, *graph, *topology);
  if (!plan.ok()) return plan.status();
  *method = plan->method;
  resolved->topology = *topology;
  if (!topology->runtime_model_path.empty()) {
    simulator::Topology roofline = *topology;
    for (simulator::DeviceProfile& device : roofline.devices) {
      device.runtime_model = nullptr;
    }
    const simulator::RooflineCostModel cost_model;
    const simulator::Simulator simulator(*graph, roofline, cost_model);
    simulator::SimulationOptions simulation;
    simulation.record_timeline = false;
    absl::StatusOr<simulator::SimulationResult> result =
        simulator.Simulate(*plan, simulation);
    if (result.ok()) resolved->roofline_step_time_s = result->step_time_s;
  }
  const std::vector<std::string> presets = simulator::PresetTopologyNames();
  if (std::find(presets.begin(), presets.end(), options.topology) !=
      presets.end()) {
    request.mutable_topology()->set_preset(options.topology);
  } else {
    *request.mutable_topology()->mutable_topology() =
        simulator::TopologyToProto(*topology);
  }
  *request.mutable_plan() = simulator::PlanToProto(*plan);
  for (const auto& [name, value] : import.symbolic_dims) {
    (*request.mutable_options()->mutable_symbolic_dims())[name] = value;
  }
  request.mutable_options()->set_default_dim(import.default_symbolic_dim);
  request.set_measure(true);
  return request;
}

void Report(const MeasureOptions& options, const Resolved& resolved,
            const gopt::v1::EvaluateResponse& response, std::ostream& out) {
  const std::string& method = resolved.method;
  if (options.json) {
    nlohmann::json json = {
        {"cost_model", response.cost_model()},
        {"graph", response.graph_name()},
        {"nodes", response.num_nodes()},
        {"topology", options.topology},
        {"method", method},
        {"predicted_step_time_s", response.step_time_s()},
        {"measured_step_time_s", response.measured_step_time_s()},
        {"measured_spread", response.measured_spread()},
        {"measured_min_step_time_s", response.measured_min_step_time_s()},
        {"real_op_fraction", response.real_op_fraction()},
        {"real_op_flop_fraction", response.real_op_flop_fraction()},
        {"measured_on", response.measured_on()},
        {"default_predicted_step_time_s", response.default_step_time_s()},
        {"warnings", std::vector<std::string>(response.warnings().begin(),
                                              response.warnings().end())}};
    if (resolved.roofline_step_time_s > 0) {
      json["roofline_predicted_step_time_s"] = resolved.roofline_step_time_s;
    }
    out << json.dump(2) << "\n";
    return;
  }
  out << absl::StrFormat(
      "graph: %s (%d nodes), topology %s, plan %s\n"
      "predicted step time: %.3f ms\n"
      "measured step time:  %.3f ms (spread %.1f%%, fastest run %.3f ms, "
      "on %s)\n"
      "real ops: %.1f%% of nodes, %.1f%% of FLOPs\n",
      response.graph_name(), response.num_nodes(), options.topology, method,
      response.step_time_s() * 1e3, response.measured_step_time_s() * 1e3,
      response.measured_spread() * 100,
      response.measured_min_step_time_s() * 1e3, response.measured_on(),
      response.real_op_fraction() * 100,
      response.real_op_flop_fraction() * 100);
  out << "priced by: " << response.cost_model();
  if (resolved.roofline_step_time_s > 0) {
    out << absl::StrFormat(" (the calibrated roofline alone: %.3f ms)",
                           resolved.roofline_step_time_s * 1e3);
  }
  out << "\n";
  for (const std::string& warning : response.warnings()) {
    out << "warning: " << warning << "\n";
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<engine::PlanMeasurer>> MakeCliMeasurer(
    const std::string& workers) {
  engine::WorkerPoolOptions options;
  options.health_check_interval_seconds = 0;
  // The CLI's 'local' is this process's executors (the user's own process:
  // nothing to isolate), not gopt-server's gopt-worker child.
  absl::StatusOr<std::unique_ptr<engine::WorkerPool>> pool =
      engine::WorkerPool::FromSpec(workers == "local" ? "in-process" : workers,
                                   worker::ExecutorOptions(), options);
  if (!pool.ok()) return pool.status();
  return std::shared_ptr<engine::PlanMeasurer>(std::move(*pool));
}

absl::Status RunMeasure(const MeasureOptions& options, std::ostream& out) {
  Resolved resolved;
  absl::StatusOr<gopt::v1::EvaluateRequest> request =
      MakeRequest(options, &resolved);
  if (!request.ok()) return request.status();
  absl::StatusOr<gopt::v1::EvaluateResponse> response;
  if (options.server.empty()) {
    engine::EngineOptions engine_options;
    engine_options.max_graph_nodes = options.read.import.limits.max_nodes;
    absl::StatusOr<std::shared_ptr<engine::PlanMeasurer>> measurer =
        MakeCliMeasurer(options.workers);
    if (!measurer.ok()) return measurer.status();
    engine_options.measurer = *std::move(measurer);
    if (request->topology().has_topology()) {
      // This process loaded the file: price with its learned model.
      engine_options.named_topologies = {{options.topology, resolved.topology}};
      request->mutable_topology()->set_preset(options.topology);
    }
    const engine::Engine engine(engine_options, nullptr);
    engine::RequestContext context;
    context.deadline = absl::Now() + absl::Seconds(options.timeout_seconds);
    response = engine.Evaluate(*request, context);
  } else {
    ClientOptions client_options;
    client_options.target = options.server;
    client_options.timeout = absl::Seconds(options.timeout_seconds);
    absl::StatusOr<std::unique_ptr<OptimizerClient>> client =
        OptimizerClient::Connect(client_options);
    if (!client.ok()) return client.status();
    response = (*client)->Evaluate(*request);
  }
  if (!response.ok()) return response.status();
  Report(options, resolved, *response, out);
  if (response->measured_step_time_s() <= 0) {
    for (const std::string& warning : response->warnings()) {
      if (warning.rfind("measure:", 0) == 0) {
        return absl::UnavailableError(warning);
      }
    }
    return absl::UnavailableError("the plan was not measured");
  }
  return absl::OkStatus();
}

}  // namespace gopt::client
