#include "engine/decisions.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/decisions.h"
#include "graph/import/builtin_exporters.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "util/status_macros.h"

namespace gopt::engine {
namespace {

const graph::ExporterRegistry& Exporters() {
  static const graph::ExporterRegistry* const registry = [] {
    auto* exporters = new graph::ExporterRegistry();
    graph::RegisterBuiltinExporters(exporters);
    return exporters;
  }();
  return *registry;
}

std::vector<std::string> DeviceNames(const simulator::Topology& topology) {
  std::vector<std::string> names;
  for (const graph::ExportDevice& device : ExportDevicesOf(topology)) {
    names.push_back(device.name);
  }
  return names;
}

}  // namespace

std::vector<graph::ExportDevice> ExportDevicesOf(
    const simulator::Topology& topology) {
  std::vector<graph::ExportDevice> devices;
  for (int i = 0; i < topology.num_devices(); ++i) {
    const simulator::DeviceKind kind = topology.devices[i].kind;
    devices.push_back({absl::StrCat(topology.devices[i].name, ":", i),
                       kind == simulator::DeviceKind::kCpu   ? "cpu"
                       : kind == simulator::DeviceKind::kTpu ? "tpu"
                                                             : "gpu"});
  }
  return devices;
}

absl::StatusOr<SourceFile> SourceFileOf(
    const gopt::v1::GraphInput& input,
    const graph::ImporterRegistry& importers) {
  if (input.source_case() == gopt::v1::GraphInput::kGraph) {
    return SourceFile{input.graph().SerializeAsString(), "gopt"};
  }
  const std::string& format = input.format();
  if (!format.empty() && format != "auto") {
    return SourceFile{input.serialized(), format};
  }
  ASSIGN_OR_RETURN(const graph::Importer* importer,
                   importers.Detect(input.serialized()));
  return SourceFile{input.serialized(), std::string(importer->format())};
}

absl::StatusOr<graph::ScheduleAs> ParseScheduleAs(absl::string_view text) {
  if (text.empty() || text == "priority") return graph::ScheduleAs::kPriority;
  if (text == "control-deps") return graph::ScheduleAs::kControlDeps;
  return absl::InvalidArgumentError(
      absl::StrCat("schedule_as: '", text,
                   "' is not one of \"priority\", \"control-deps\""));
}

absl::StatusOr<graph::ExportResult> ApplyPlan(
    const SourceFile& file, const graph::Graph& graph,
    const gopt::v1::Plan& plan, const simulator::Topology& topology,
    graph::ScheduleAs schedule_as) {
  ASSIGN_OR_RETURN(const graph::Exporter* exporter,
                   Exporters().Find(file.format));
  RETURN_IF_ERROR(
      graph::CheckPlanFitsGraph(graph, plan, topology.num_devices()));
  const simulator::Plan checked = simulator::PlanFromProto(plan);
  RETURN_IF_ERROR(simulator::ValidatePlan(checked, graph, topology));
  // The simulator is what finds fusion groups that form a cycle.
  simulator::RooflineCostModel cost_model;
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  RETURN_IF_ERROR(simulator::Simulator(graph, topology, cost_model)
                      .Simulate(checked, quick)
                      .status());
  gopt::v1::Plan consistent = plan;
  graph::MakePlanSourceConsistent(graph, &consistent);
  int changed = 0;
  for (int i = 0; i < consistent.device_size(); ++i) {
    changed += consistent.device(i) != plan.device(i) ||
               (plan.priority_size() > 0 &&
                consistent.priority(i) != plan.priority(i)) ||
               (plan.fusion_group_size() > 0 &&
                consistent.fusion_group(i) != plan.fusion_group(i));
  }
  graph::ExportOptions options;
  options.topology_name = topology.name;
  options.devices = ExportDevicesOf(topology);
  options.schedule_as = schedule_as;
  ASSIGN_OR_RETURN(graph::ExportResult result,
                   exporter->Export(file.contents, graph, consistent, options));
  if (changed > 0) {
    result.warnings.push_back(absl::StrCat(
        changed,
        " node(s) share a source element with another node and take its "
        "decision in the written file (one element, one decision)"));
  }
  return result;
}

absl::StatusOr<std::optional<gopt::v1::Plan>> ReadEmbeddedPlan(
    const SourceFile& file, const graph::Graph& graph,
    const simulator::Topology& topology) {
  absl::StatusOr<const graph::Exporter*> exporter =
      Exporters().Find(file.format);
  if (!exporter.ok()) return std::nullopt;
  return (*exporter)->ReadPlan(file.contents, graph, ExportDevicesOf(topology));
}

absl::Status AddDecisions(const gopt::v1::OptimizeRequest& request,
                          const graph::ImporterRegistry& importers,
                          const graph::Graph& graph,
                          const simulator::Topology& topology,
                          int64_t max_response_bytes,
                          gopt::v1::OptimizeResponse* response) {
  for (gopt::v1::NodeDecision& decision : graph::DecisionsBySource(
           graph, response->plan(), DeviceNames(topology))) {
    *response->add_decisions() = std::move(decision);
  }
  const std::vector<std::string> names = DeviceNames(topology);
  for (int d = 0; d < topology.num_devices(); ++d) {
    gopt::v1::DeviceSummary* summary = response->add_device_summaries();
    summary->set_device(d);
    summary->set_device_name(names[d]);
  }
  const gopt::v1::Plan& plan = response->plan();
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const int device = plan.device_size() > 0 ? plan.device(id) : 0;
    if (device < 0 || device >= topology.num_devices()) continue;
    gopt::v1::DeviceSummary* summary =
        response->mutable_device_summaries(device);
    const graph::Node& node = graph.node(id);
    summary->set_ops(summary->ops() + 1);
    summary->set_flops(summary->flops() + node.flops);
    if (node.kind == graph::OpKind::kParameter ||
        node.kind == graph::OpKind::kConstant) {
      summary->set_parameter_bytes(summary->parameter_bytes() +
                                   node.output_bytes());
    }
  }
  if (!request.return_graph()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const graph::ScheduleAs schedule_as,
                   ParseScheduleAs(request.schedule_as()));
  ASSIGN_OR_RETURN(SourceFile file, SourceFileOf(request.graph(), importers));
  ASSIGN_OR_RETURN(
      graph::ExportResult exported,
      ApplyPlan(file, graph, response->plan(), topology, schedule_as));
  const int64_t size = static_cast<int64_t>(response->ByteSizeLong()) +
                       static_cast<int64_t>(exported.contents.size()) + 16;
  if (max_response_bytes > 0 && size > max_response_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "return_graph: the response with the optimized graph would take ", size,
        " bytes, over this server's message limit of ", max_response_bytes,
        " bytes (--max_message_bytes); ask without return_graph and apply "
        "the plan locally (`gopt apply FILE --plan=plan.json --write=OUT`)"));
  }
  response->set_optimized_graph(std::move(exported.contents));
  response->set_optimized_graph_format(file.format);
  for (std::string& warning : exported.warnings) {
    response->add_warnings(std::move(warning));
  }
  return absl::OkStatus();
}

}  // namespace gopt::engine
