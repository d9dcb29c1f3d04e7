// Round trip of every exporter on the real graphs of ../shared/data: a plan
// written into the caller's file comes back from the export unchanged, on a
// graph equal to the original, so the export simulates to the same step
// time; and everything the exporter did not set is as it was.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "graph/decisions.h"
#include "graph/import/builtin_exporters.h"
#include "graph/import/builtin_importers.h"
#include "graph/import/export_testing.h"
#include "graph/native/graph_proto.h"
#include "gtest/gtest.h"
#include "onnx/onnx.pb.h"
#include "simulator/fusion_rules.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"
#include "tensorflow/graph.pb.h"
#include "tests/util/shared_data.h"
#include "tpu_graphs/tuning.pb.h"
#include "xla/hlo.pb.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

std::vector<ExportDevice> DevicesOf(const simulator::Topology& topology) {
  std::vector<ExportDevice> devices;
  for (int i = 0; i < topology.num_devices(); ++i) {
    const auto kind = topology.devices[i].kind;
    devices.push_back({absl::StrCat(topology.devices[i].name, ":", i),
                       kind == simulator::DeviceKind::kCpu   ? "cpu"
                       : kind == simulator::DeviceKind::kTpu ? "tpu"
                                                             : "gpu"});
  }
  return devices;
}

// A seeded plan that uses every decision an exporter writes: devices
// spread over the topology (kept to the graph's device constraints),
// priorities 0..15, and fusion of single-consumer producer -> consumer
// pairs that the kernel rules allow (a chain of such pairs cannot close a
// cycle).
gopt::v1::Plan SeededPlan(const Graph& graph,
                          const simulator::Topology& topology, int seed,
                          bool layouts = false) {
  std::mt19937 rng(seed);
  simulator::Plan plan = simulator::DefaultPlan(graph, topology);
  for (int32_t& device : plan.device) {
    device = static_cast<int32_t>(rng() % topology.num_devices());
  }
  simulator::KeepDeviceConstraints(graph, topology, &plan.device);
  plan.priority.resize(graph.num_nodes());
  for (int32_t& priority : plan.priority) {
    priority = static_cast<int32_t>(rng() % 16);
  }
  // Nodes that share their source element with another node share its
  // decision and run unfused (MakePlanSourceConsistent).
  gopt::v1::Plan proto = simulator::PlanToProto(plan);
  MakePlanSourceConsistent(graph, &proto);
  plan = simulator::PlanFromProto(proto);
  std::vector<bool> shared(graph.num_nodes(), false);
  for (const SourceGroup& group : GroupBySource(graph)) {
    for (NodeId id : group.nodes) shared[id] = group.nodes.size() > 1;
  }
  plan.fusion_group.assign(graph.num_nodes(), -1);
  std::vector<bool> heavy(graph.num_nodes(), false);  // by group
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const auto in = graph.in_edges(id);
    if (in.size() != 1 || in[0].control) continue;
    const NodeId producer = in[0].src;
    if (graph.out_edges(producer).size() != 1 ||
        plan.device[producer] != plan.device[id] || shared[id] ||
        shared[producer]) {
      continue;
    }
    const auto role = simulator::FusionRoleOf(graph.node(id).kind);
    const auto producer_role =
        simulator::FusionRoleOf(graph.node(producer).kind);
    if (role != simulator::FusionRole::kCheap ||
        producer_role == simulator::FusionRole::kAlone ||
        graph.node(producer).kind == OpKind::kParameter ||
        graph.node(producer).kind == OpKind::kConstant) {
      continue;
    }
    const int32_t group = plan.fusion_group[producer];
    if ((group >= 0 ? heavy[group]
                    : producer_role == simulator::FusionRole::kHeavy) &&
        simulator::ComputesStatistics(graph, id)) {
      continue;
    }
    if (group < 0) {
      plan.fusion_group[producer] = producer;
      heavy[producer] = producer_role == simulator::FusionRole::kHeavy;
    }
    plan.fusion_group[id] = plan.fusion_group[producer];
  }
  if (layouts) {
    // Layout-configurable nodes of rank 2 or more that are their source
    // element's only node: a third keep the default (no decision), a third
    // get the row-major layout as an explicit decision, a third
    // column-major.
    std::mt19937 layout_rng(seed + 1);
    plan.layout.assign(graph.num_nodes(), {});
    for (NodeId id = 0; id < graph.num_nodes(); ++id) {
      const Node& node = graph.node(id);
      if (!node.layout_configurable || shared[id] || node.outputs.empty() ||
          node.outputs[0].is_tuple() || node.outputs[0].rank() < 2) {
        continue;
      }
      const int rank = node.outputs[0].rank();
      switch (layout_rng() % 3) {
        case 1:
          for (int d = rank - 1; d >= 0; --d) plan.layout[id].push_back(d);
          break;
        case 2:
          for (int d = 0; d < rank; ++d) plan.layout[id].push_back(d);
          break;
        default:
          break;
      }
    }
  }
  return simulator::PlanToProto(plan);
}

double StepTime(const Graph& graph, const simulator::Topology& topology,
                const gopt::v1::Plan& plan) {
  simulator::RooflineCostModel cost_model;
  simulator::Simulator simulator(graph, topology, cost_model);
  absl::StatusOr<simulator::SimulationResult> result =
      simulator.Simulate(simulator::PlanFromProto(plan));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->step_time_s : -1;
}

// CompareGraphs, but outputs compared without their layouts: node for node
// in NodeId order, the same names, ops, kinds, costs, output types and
// operands.
absl::Status CompareGraphsIgnoringLayouts(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(a.num_nodes(), " vs ", b.num_nodes(), " nodes"));
  }
  auto without_layouts = [](std::vector<TensorType> types) {
    for (TensorType& type : types) type.minor_to_major.clear();
    return types;
  };
  auto operands = [](const Graph& graph, NodeId id) {
    std::vector<std::pair<NodeId, bool>> sources;
    for (const Edge& edge : graph.in_edges(id)) {
      sources.emplace_back(edge.src, edge.control);
    }
    std::sort(sources.begin(), sources.end());
    return sources;
  };
  for (NodeId id = 0; id < a.num_nodes(); ++id) {
    const Node& x = a.node(id);
    const Node& y = b.node(id);
    if (x.name != y.name || x.op != y.op || x.kind != y.kind ||
        x.flops != y.flops || x.bytes_read != y.bytes_read ||
        x.bytes_written != y.bytes_written ||
        without_layouts(x.outputs) != without_layouts(y.outputs) ||
        operands(a, id) != operands(b, id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", id, " '", x.name, "' differs"));
    }
  }
  return absl::OkStatus();
}

struct RoundTrip {
  std::string original;
  std::string exported;
  std::vector<std::string> warnings;
};

// Imports `contents`, exports a seeded plan (without fusion groups when
// `fuse` is false), re-imports the export and checks that the graph, the
// plan and its step time come back.
RoundTrip CheckRoundTrip(const std::string& what, const std::string& contents,
                         const std::string& format, bool fuse = true,
                         bool layouts = false) {
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("v100x4-nvlink");
  EXPECT_TRUE(topology.ok());
  const std::vector<ExportDevice> devices = DevicesOf(*topology);

  ImportOptions options;
  options.source_name = what;
  for (const auto& [name, value] : testing::SharedDataDims(what)) {
    options.symbolic_dims[name] = value;
  }
  absl::StatusOr<Graph> graph = importers.Import(contents, format, options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  gopt::v1::Plan plan = SeededPlan(*graph, *topology, /*seed=*/40, layouts);
  if (!fuse) {
    for (int32_t& group : *plan.mutable_fusion_group()) group = -1;
  }
  EXPECT_TRUE(CheckPlanFitsGraph(*graph, plan, topology->num_devices()).ok());

  absl::StatusOr<const Exporter*> exporter = exporters.Find(format);
  EXPECT_TRUE(exporter.ok()) << exporter.status();
  ExportOptions export_options;
  export_options.topology_name = topology->name;
  export_options.devices = devices;
  absl::StatusOr<ExportResult> exported =
      (*exporter)->Export(contents, *graph, plan, export_options);
  EXPECT_TRUE(exported.ok()) << exported.status();
  if (!exported.ok()) return {};

  absl::StatusOr<Graph> again =
      importers.Import(exported->contents, format, options);
  EXPECT_TRUE(again.ok()) << again.status();
  if (!again.ok()) return {};
  // The same graph node for node (HLO: the export's _gopt_order gives the
  // instructions back in the original order). Layout decisions are in the
  // export's shapes, so in its output types.
  const absl::Status same = layouts
                                ? CompareGraphsIgnoringLayouts(*graph, *again)
                                : CompareGraphs(*graph, *again);
  EXPECT_TRUE(same.ok()) << what << ": " << same;
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      (*exporter)->ReadPlan(exported->contents, *again, devices);
  EXPECT_TRUE(read.ok()) << read.status();
  if (!read.ok() || !read->has_value()) {
    ADD_FAILURE() << what << ": the export carries no plan";
    return {};
  }
  const gopt::v1::Plan& back = **read;
  EXPECT_THAT(back.device(), ::testing::ElementsAreArray(plan.device()))
      << what;
  EXPECT_THAT(back.priority(), ::testing::ElementsAreArray(plan.priority()))
      << what;
  EXPECT_THAT(back.fusion_group(),
              ::testing::ElementsAreArray(plan.fusion_group()))
      << what;
  EXPECT_EQ(back.layout_size(), plan.layout_size()) << what;
  int layout_decisions = 0;
  for (int i = 0; i < std::min(back.layout_size(), plan.layout_size()); ++i) {
    EXPECT_THAT(back.layout(i).minor_to_major(),
                ::testing::ElementsAreArray(plan.layout(i).minor_to_major()))
        << what << " node " << graph->node(i).name;
    layout_decisions += !plan.layout(i).minor_to_major().empty();
  }
  if (layouts) {
    EXPECT_GT(layout_decisions, 0) << what;
    std::cout << what << ": " << layout_decisions
              << " layout decisions read back\n";
  }
  const double before = StepTime(*graph, *topology, plan);
  const double after = StepTime(*again, *topology, **read);
  EXPECT_GT(before, 0);
  // The same graph, nodes and plan: the simulation is the same computation.
  EXPECT_EQ(before, after) << what;
  std::cout << what << ": step " << before << " s, " << after
            << " s after the round trip\n";
  // The original has no plan in it.
  absl::StatusOr<std::optional<gopt::v1::Plan>> none =
      (*exporter)->ReadPlan(contents, *graph, devices);
  EXPECT_TRUE(none.ok() && !none->has_value()) << what;
  return {contents, exported->contents, exported->warnings};
}

// Clears every field the ONNX exporter sets, so that what remains must be
// the original field for field.
void ClearOnnxDecisions(onnx::ModelProto* model) {
  model->clear_ir_version();
  model->clear_configuration();
  model->clear_metadata_props();
  auto strip = [](auto* props) {
    for (int i = props->size() - 1; i >= 0; --i) {
      if (absl::StartsWith(props->Get(i).key(), "gopt.")) {
        props->DeleteSubrange(i, 1);
      }
    }
  };
  for (auto& node : *model->mutable_graph()->mutable_node()) {
    node.clear_device_configurations();
    strip(node.mutable_metadata_props());
  }
  for (auto& init : *model->mutable_graph()->mutable_initializer()) {
    strip(init.mutable_metadata_props());
  }
  for (auto& input : *model->mutable_graph()->mutable_input()) {
    strip(input.mutable_metadata_props());
  }
}

class OnnxRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxRoundTripTest, SamePlanSameStepTimeEverythingElseKept) {
  const std::string contents = testing::ReadSharedData(GetParam());
  const RoundTrip trip = CheckRoundTrip(GetParam(), contents, "onnx");
  onnx::ModelProto original;
  onnx::ModelProto exported;
  ASSERT_TRUE(original.ParseFromString(trip.original));
  ASSERT_TRUE(exported.ParseFromString(trip.exported));
  EXPECT_EQ(exported.ir_version(),
            std::max<int64_t>(original.ir_version(), 11));
  ASSERT_EQ(exported.configuration_size(), 1);
  EXPECT_EQ(exported.configuration(0).name(), "v100x4-nvlink");
  EXPECT_EQ(exported.configuration(0).device_size(), 4);
  ClearOnnxDecisions(&original);
  ClearOnnxDecisions(&exported);
  EXPECT_TRUE(SerializeDeterministically(original) ==
              SerializeDeterministically(exported))
      << GetParam() << ": a field the exporter does not own changed";
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, OnnxRoundTripTest,
    ::testing::Values("onnx/light_resnet50.onnx", "onnx/light_shufflenet.onnx",
                      "onnx/light_squeezenet.onnx",
                      "onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                      "onnx/silero_vad_legacy.onnx"));

class GraphDefRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GraphDefRoundTripTest, SamePlanSameStepTimeEverythingElseKept) {
  const std::string contents = testing::ReadSharedData(GetParam());
  const RoundTrip trip = CheckRoundTrip(GetParam(), contents, "graphdef");
  tensorflow::GraphDef original;
  tensorflow::GraphDef exported;
  ASSERT_TRUE(original.ParseFromString(trip.original));
  ASSERT_TRUE(exported.ParseFromString(trip.exported));
  ASSERT_EQ(original.node_size(), exported.node_size());
  for (int i = 0; i < exported.node_size(); ++i) {
    tensorflow::NodeDef* node = exported.mutable_node(i);
    EXPECT_THAT(node->device(),
                HasSubstr("/job:localhost/replica:0/task:0/device:GPU:"));
    node->clear_device();
    node->mutable_attr()->erase(std::string("_XlaCluster"));
    node->mutable_attr()->erase(std::string("_gopt_priority"));
  }
  EXPECT_TRUE(SerializeDeterministically(original) ==
              SerializeDeterministically(exported))
      << GetParam() << ": a field the exporter does not own changed";
}

INSTANTIATE_TEST_SUITE_P(SharedData, GraphDefRoundTripTest,
                         ::testing::Values("tf_graphdef/kws_LSTM_S.pb",
                                           "tf_graphdef/kws_DS_CNN_S.pb"));

// A TF2 loop (StatelessWhile calling library functions) is one node, and
// its decisions are written on that node.
TEST(GraphDefRoundTripTest, FunctionalWhileKeepsItsDecisionsOnItsNode) {
  constexpr char kLoop[] = R"pb(
    node {
      name: "i0"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT32 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT32
            tensor_shape {}
            int_val: 0
          }
        }
      }
    }
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "shape"
        value {
          shape {
            dim { size: 8 }
            dim { size: 8 }
          }
        }
      }
    }
    node {
      name: "loop"
      op: "StatelessWhile"
      input: "i0"
      input: "x"
      attr {
        key: "T"
        value { list { type: DT_INT32 type: DT_FLOAT } }
      }
      attr {
        key: "cond"
        value { func { name: "cond_fn" } }
      }
      attr {
        key: "body"
        value { func { name: "body_fn" } }
      }
    }
    node { name: "y" op: "Relu" input: "loop:1" }
    library {
      function {
        signature {
          name: "cond_fn"
          input_arg { name: "i" type: DT_INT32 }
          input_arg { name: "x" type: DT_FLOAT }
          output_arg { name: "out" type: DT_BOOL }
        }
        node_def {
          name: "n"
          op: "Const"
          attr {
            key: "dtype"
            value { type: DT_INT32 }
          }
          attr {
            key: "value"
            value {
              tensor {
                dtype: DT_INT32
                tensor_shape {}
                int_val: 3
              }
            }
          }
        }
        node_def { name: "less" op: "Less" input: "i" input: "n:output:0" }
        ret { key: "out" value: "less:z:0" }
      }
      function {
        signature {
          name: "body_fn"
          input_arg { name: "i" type: DT_INT32 }
          input_arg { name: "x" type: DT_FLOAT }
          output_arg { name: "i_next" type: DT_INT32 }
          output_arg { name: "x_next" type: DT_FLOAT }
        }
        node_def {
          name: "one"
          op: "Const"
          attr {
            key: "dtype"
            value { type: DT_INT32 }
          }
          attr {
            key: "value"
            value {
              tensor {
                dtype: DT_INT32
                tensor_shape {}
                int_val: 1
              }
            }
          }
        }
        node_def { name: "next" op: "AddV2" input: "i" input: "one:output:0" }
        node_def { name: "mm" op: "MatMul" input: "x" input: "x" }
        ret { key: "i_next" value: "next:z:0" }
        ret { key: "x_next" value: "mm:product:0" }
      }
    }
  )pb";
  const RoundTrip trip = CheckRoundTrip("while.pbtxt", kLoop, "graphdef");
  tensorflow::GraphDef exported;
  ASSERT_TRUE(
      google::protobuf::TextFormat::ParseFromString(trip.exported, &exported));
  ASSERT_EQ(exported.node_size(), 4);
  EXPECT_EQ(exported.node(2).name(), "loop");
  EXPECT_THAT(exported.node(2).device(), HasSubstr("/device:GPU:"));
  EXPECT_TRUE(exported.node(2).attr().contains("_gopt_priority"));
  EXPECT_EQ(exported.library().function_size(), 2);
}

class TfjsRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TfjsRoundTripTest, SamePlanSameStepTime) {
  const std::string contents = testing::ReadSharedData(GetParam());
  const RoundTrip trip = CheckRoundTrip(GetParam(), contents, "tfjs");
  EXPECT_THAT(trip.exported, HasSubstr("\"_XlaCluster\""));
  EXPECT_THAT(trip.exported, HasSubstr("\"weightsManifest\""));
}

INSTANTIATE_TEST_SUITE_P(SharedData, TfjsRoundTripTest,
                         ::testing::Values("tfjs/handtrack.json",
                                           "tfjs/movenet-multipose.json"));

class HloRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HloRoundTripTest, SamePlanSameStepTimeEverythingElseKept) {
  const std::string contents = testing::ReadSharedData(GetParam());
  // Fusion groups become fusion instructions (HloFusionRoundTripTest).
  const RoundTrip trip =
      CheckRoundTrip(GetParam(), contents, "hlo", /*fuse=*/false);
  EXPECT_THAT(trip.exported, HasSubstr("sharding={maximal device="));
  if (absl::StrContains(contents, "frontend_attributes")) return;
  // Without gopt's two attributes every line is the original's.
  const std::regex ours(
      R"(, sharding=\{maximal device=\d+\}|, frontend_attributes=\{(_gopt_priority="\d+"(,_gopt_kernel="\d+")?,)?_gopt_order="\d+"\})");
  // The schedule moves whole lines and marks the module scheduled.
  std::string kept = std::regex_replace(trip.exported, ours, "");
  if (!absl::StrContains(contents, "is_scheduled=true")) {
    kept = std::regex_replace(kept, std::regex(", is_scheduled=true"), "");
  }
  std::vector<std::string> kept_lines = absl::StrSplit(kept, '\n');
  std::vector<std::string> lines = absl::StrSplit(contents, '\n');
  std::sort(kept_lines.begin(), kept_lines.end());
  std::sort(lines.begin(), lines.end());
  EXPECT_TRUE(kept_lines == lines)
      << GetParam() << ": a byte the exporter does not own changed";
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, HloRoundTripTest,
    ::testing::Values("hlo/maml_flax_train_step.hlo", "hlo/jaxrl_td_target.hlo",
                      "hlo/mixer_b16_jax_unopt.hlo",
                      "hlo/llama2_ptxla_neuron_train_tp1.hlo",
                      "hlo/nux_flow_jit_loss9581.hlo"));

// Layout decisions (explicit row-major and column-major on
// layout-configurable nodes) come back from the shapes they were written
// into; the caller's own layouts (no _gopt_layout) are no decision.
class HloLayoutRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HloLayoutRoundTripTest, LayoutsReadBackFromTheShapes) {
  const std::string contents = testing::ReadSharedData(GetParam());
  const RoundTrip trip = CheckRoundTrip(GetParam(), contents, "hlo",
                                        /*fuse=*/false, /*layouts=*/true);
  EXPECT_THAT(trip.exported, HasSubstr("_gopt_layout=\"0,1\""));
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, HloLayoutRoundTripTest,
    ::testing::Values("hlo/maml_flax_train_step.hlo", "hlo/jaxrl_td_target.hlo",
                      "hlo/mixer_b16_jax_unopt.hlo",
                      "hlo/llama2_ptxla_neuron_train_tp1.hlo",
                      "hlo/nux_flow_jit_loss9581.hlo"));

// The HloModuleProto inside the TpuGraphs layout file (a real module
// compiled for TPU), serialized alone.
std::string LayoutModuleProtoBytes() {
  tpu_graphs::ModuleTuningData data;
  EXPECT_TRUE(data.ParseFromString(
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb")));
  return data.module().SerializeAsString();
}

// Clears every field the HloModuleProto exporter sets, so that what remains
// must be the original field for field (unknown fields included).
void ClearHloProtoDecisions(xla::HloModuleProto* module) {
  module->clear_schedule();
  for (auto& computation : *module->mutable_computations()) {
    for (auto& instruction : *computation.mutable_instructions()) {
      instruction.clear_sharding();
      auto& map = *instruction.mutable_frontend_attributes()->mutable_map();
      map.erase("_gopt_priority");
      map.erase("_gopt_kernel");
      map.erase("_gopt_layout");
      map.erase("_gopt_order");
      if (map.empty()) instruction.clear_frontend_attributes();
    }
  }
}

TEST(HloProtoRoundTripTest, SamePlanSameStepTimeEverythingElseKept) {
  const std::string contents = LayoutModuleProtoBytes();
  // Fusion groups become fusion instructions (HloProtoFusionTest).
  const RoundTrip trip = CheckRoundTrip("module_tuning_data_layout.hlo.pb",
                                        contents, "hlo-proto", /*fuse=*/false);
  xla::HloModuleProto original;
  xla::HloModuleProto exported;
  ASSERT_TRUE(original.ParseFromString(trip.original));
  ASSERT_TRUE(exported.ParseFromString(trip.exported));
  // Every computation that no fusion calls has a schedule: each of its
  // instructions once, after its operands.
  CheckFusedModule(exported);
  int sharded = 0;
  for (const auto& computation : exported.computations()) {
    for (const auto& instruction : computation.instructions()) {
      if (instruction.sharding().type() == xla::OpSharding::MAXIMAL) {
        ASSERT_EQ(instruction.sharding().tile_assignment_devices_size(), 1);
        ++sharded;
      }
    }
  }
  EXPECT_GT(sharded, 0);
  ClearHloProtoDecisions(&original);
  ClearHloProtoDecisions(&exported);
  EXPECT_TRUE(SerializeDeterministically(original) ==
              SerializeDeterministically(exported))
      << "a field the exporter does not own changed";
}

// The TPU module's shapes carry TPU layouts of their own (tiles, other
// orders): only the instructions marked _gopt_layout carry decisions, and
// the step time with layouts comes back exactly.
TEST(HloProtoRoundTripTest, LayoutsReadBackFromTheShapes) {
  const std::string contents = LayoutModuleProtoBytes();
  const RoundTrip trip =
      CheckRoundTrip("module_tuning_data_layout.hlo.pb", contents, "hlo-proto",
                     /*fuse=*/false, /*layouts=*/true);
  xla::HloModuleProto exported;
  ASSERT_TRUE(exported.ParseFromString(trip.exported));
  int marked = 0;
  for (const auto& computation : exported.computations()) {
    for (const auto& instruction : computation.instructions()) {
      const auto& map = instruction.frontend_attributes().map();
      auto it = map.find("_gopt_layout");
      if (it == map.end()) continue;
      ++marked;
      std::vector<std::string> dims;
      for (int64_t d : instruction.shape().layout().minor_to_major()) {
        dims.push_back(absl::StrCat(d));
      }
      EXPECT_EQ(it->second, absl::StrJoin(dims, ",")) << instruction.name();
    }
  }
  EXPECT_GT(marked, 0);
}

// Checks that `again` (the import of an export with fusion instructions)
// is `graph` node for node and that the plan read back from it is `plan`,
// with the same step time.
void ExpectSameGraphAndPlan(const std::string& what, const Graph& graph,
                            const gopt::v1::Plan& plan, const Graph& again,
                            const gopt::v1::Plan& read,
                            const simulator::Topology& topology) {
  EXPECT_EQ(again.num_nodes(), graph.num_nodes()) << what;
  const absl::Status same = CompareGraphs(graph, again);
  EXPECT_TRUE(same.ok()) << what << ": " << same;
  EXPECT_THAT(read.device(), ::testing::ElementsAreArray(plan.device()));
  EXPECT_THAT(read.priority(), ::testing::ElementsAreArray(plan.priority()));
  EXPECT_THAT(read.fusion_group(),
              ::testing::ElementsAreArray(plan.fusion_group()));
  // The same graph and plan: the simulation is the same computation.
  const double before = StepTime(graph, topology, plan);
  const double after = StepTime(again, topology, read);
  EXPECT_EQ(before, after) << what;
  std::cout << what << ": step " << before << " s as planned, " << after
            << " s from the export with fusion instructions\n";
}

// Fusion groups are written as fusion instructions calling gopt's fused
// computations; importing the export unfolds them (_gopt_order), giving
// back the original graph and the plan with its groups.
class HloFusionRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HloFusionRoundTripTest, GroupsBecomeFusionInstructionsAndComeBack) {
  const std::string contents = testing::ReadSharedData(GetParam());
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("v100x4-nvlink");
  ASSERT_TRUE(topology.ok());
  const std::vector<ExportDevice> devices = DevicesOf(*topology);
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = SeededPlan(*graph, *topology, /*seed=*/40);
  // Members per fusion group.
  absl::flat_hash_map<int32_t, int> members;
  for (int32_t group : plan.fusion_group()) {
    if (group >= 0) ++members[group];
  }
  int groups = 0;
  for (const auto& [group, count] : members) groups += count >= 2;
  ASSERT_GT(groups, 0);
  ExportOptions options;
  options.topology_name = topology->name;
  options.devices = devices;
  const Exporter* exporter = *exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      exporter->Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  // A group only XLA cannot fuse stays attributes, named in a warning:
  // here groups that span a call gopt inlined into its caller, and a dot or
  // convolution whose group's result has another element type.
  for (const std::string& warning : exported->warnings) {
    int32_t kernel = -1;
    if (std::sscanf(warning.c_str(), "fusion group %d ", &kernel) != 1) {
      continue;
    }
    EXPECT_THAT(warning,
                ::testing::AnyOf(
                    HasSubstr("a call gopt inlined into its caller"),
                    HasSubstr("gopt prices a fusion at its result's element")));
    --groups;
  }
  ASSERT_GT(groups, 0);
  const std::regex fusion(R"(fusion\([^\n]*calls=%gopt_fused_computation)");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(exported->contents.begin(),
                                         exported->contents.end(), fusion),
                    std::sregex_iterator()),
      groups);
  absl::StatusOr<Graph> again = importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter->ReadPlan(exported->contents, *again, devices);
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  ExpectSameGraphAndPlan(
      absl::StrCat(GetParam(), " (", groups, " fusion instructions)"), *graph,
      plan, *again, **read, *topology);
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, HloFusionRoundTripTest,
    ::testing::Values("hlo/maml_flax_train_step.hlo", "hlo/jaxrl_td_target.hlo",
                      "hlo/mixer_b16_jax_unopt.hlo",
                      "hlo/llama2_ptxla_neuron_train_tp1.hlo",
                      "hlo/nux_flow_jit_loss9581.hlo"));

// The real TPU module: seeded fusion groups become fusion instructions, and
// the export imports as the original graph with the plan (as the HLO text
// export).
TEST(HloProtoFusionTest, GroupsBecomeFusionInstructionsAndComeBack) {
  const std::string contents = LayoutModuleProtoBytes();
  const BuiltinRegistries registries;
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("v100x4-nvlink");
  ASSERT_TRUE(topology.ok());
  const std::vector<ExportDevice> devices = DevicesOf(*topology);
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo-proto", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = SeededPlan(*graph, *topology, /*seed=*/40);
  absl::flat_hash_map<int32_t, int> members;
  for (int32_t group : plan.fusion_group()) {
    if (group >= 0) ++members[group];
  }
  int groups = 0;
  for (const auto& [group, count] : members) groups += count >= 2;
  ASSERT_GT(groups, 0);
  ExportOptions options;
  options.topology_name = topology->name;
  options.devices = devices;
  const Exporter& exporter = **registries.exporters.Find("hlo-proto");
  absl::StatusOr<ExportResult> exported =
      exporter.Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  for (const std::string& warning : exported->warnings) {
    int32_t kernel = -1;
    ASSERT_EQ(std::sscanf(warning.c_str(), "fusion group %d ", &kernel), 1)
        << warning;
    // The 8 groups of a bf16 convolution and the convert of its result to
    // f32 (as a fusion it would be priced as an f32 kernel).
    EXPECT_THAT(warning,
                ::testing::AnyOf(
                    HasSubstr("a call gopt inlined into its caller"),
                    HasSubstr("gopt prices a fusion at its result's element")));
    --groups;
  }
  ASSERT_GT(groups, 0);
  xla::HloModuleProto module;
  ASSERT_TRUE(module.ParseFromString(exported->contents));
  xla::HloModuleProto original;
  ASSERT_TRUE(original.ParseFromString(contents));
  int original_fusions = 0;
  for (const auto& computation : original.computations()) {
    for (const auto& instruction : computation.instructions()) {
      original_fusions += instruction.opcode() == "fusion";
    }
  }
  EXPECT_EQ(
      static_cast<int>(CheckFusedModule(module).size()) - original_fusions,
      groups);

  absl::StatusOr<Graph> again =
      registries.importers.Import(exported->contents, "hlo-proto", {});
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter.ReadPlan(exported->contents, *again, devices);
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  ExpectSameGraphAndPlan(
      absl::StrCat("tpu layout module (", groups, " fusion instructions)"),
      *graph, plan, *again, **read, *topology);
}

TEST(GoptRoundTripTest, PlanEmbeddedInTheGraphMessage) {
  ImporterRegistry importers;
  RegisterBuiltinImporters(&importers);
  absl::StatusOr<Graph> graph = importers.Import(
      testing::ReadSharedData("onnx/light_squeezenet.onnx"), "onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string contents = GraphToProto(*graph).SerializeAsString();
  CheckRoundTrip("squeezenet.gopt", contents, "gopt");
}

TEST(OnnxExporterTest, LayoutsAreAWarning) {
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  const std::string contents =
      testing::ReadSharedData("onnx/light_squeezenet.onnx");
  absl::StatusOr<Graph> graph = importers.Import(contents, "onnx", {});
  ASSERT_TRUE(graph.ok());
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.add_device(0);
    auto* layout = plan.add_layout();
    if (graph->node(id).outputs[0].dims.size() == 4) {
      for (int d : {1, 3, 2, 0}) layout->add_minor_to_major(d);
    }
  }
  ExportOptions options;
  options.devices = {{"cpu:0", "cpu"}};
  absl::StatusOr<ExportResult> exported =
      (*exporters.Find("onnx"))->Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  ASSERT_EQ(exported->warnings.size(), 1u);
  EXPECT_THAT(exported->warnings[0],
              HasSubstr("ONNX cannot express tensor layouts"));
}

TEST(ExporterTest, BadFileIsInvalidArgument) {
  ExporterRegistry exporters;
  RegisterBuiltinExporters(&exporters);
  Graph empty;
  for (const char* format : {"onnx", "tfjs", "hlo-proto"}) {
    absl::StatusOr<ExportResult> exported =
        (*exporters.Find(format))->Export("{not a model", empty, {}, {});
    EXPECT_EQ(exported.status().code(), absl::StatusCode::kInvalidArgument)
        << format;
  }
  const absl::Status tpugraphs = exporters.Find("tpugraphs").status();
  EXPECT_EQ(tpugraphs.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(tpugraphs.message(),
              HasSubstr("dataset of measured compiler configurations"));
  EXPECT_THAT(tpugraphs.message(), HasSubstr("not an input a compiler reads"));
}

}  // namespace
}  // namespace gopt::graph
