// Round trip of every exporter on the real graphs of ../shared/data: a plan
// written into the caller's file comes back from the export unchanged, on a
// graph equal to the original, so the export simulates to the same step
// time; and everything the exporter did not set is as it was.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "graph/decisions.h"
#include "graph/import/builtin_exporters.h"
#include "graph/import/builtin_importers.h"
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

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// Every built-in importer and exporter, for a test to import and export.
struct BuiltinRegistries {
  BuiltinRegistries() {
    RegisterBuiltinImporters(&importers);
    RegisterBuiltinExporters(&exporters);
  }
  ImporterRegistry importers;
  ExporterRegistry exporters;
};

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
                          const simulator::Topology& topology, int seed) {
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

struct RoundTrip {
  std::string original;
  std::string exported;
  std::vector<std::string> warnings;
};

// Imports `contents`, exports a seeded plan (without fusion groups when
// `fuse` is false), re-imports the export and checks that the graph, the
// plan and its step time come back.
RoundTrip CheckRoundTrip(const std::string& what, const std::string& contents,
                         const std::string& format, bool fuse = true) {
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
  gopt::v1::Plan plan = SeededPlan(*graph, *topology, /*seed=*/40);
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
  EXPECT_TRUE(CompareGraphs(*graph, *again).ok())
      << what << ": " << CompareGraphs(*graph, *again);
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      (*exporter)->ReadPlan(exported->contents, *again, devices);
  EXPECT_TRUE(read.ok()) << read.status();
  if (!read.ok() || !read->has_value()) {
    ADD_FAILURE() << what << ": the export carries no plan";
    return {};
  }
  EXPECT_THAT((*read)->device(), ::testing::ElementsAreArray(plan.device()))
      << what;
  EXPECT_THAT((*read)->priority(), ::testing::ElementsAreArray(plan.priority()))
      << what;
  EXPECT_THAT((*read)->fusion_group(),
              ::testing::ElementsAreArray(plan.fusion_group()))
      << what;
  const double before = StepTime(*graph, *topology, plan);
  const double after = StepTime(*again, *topology, **read);
  EXPECT_GT(before, 0);
  EXPECT_EQ(before, after) << what;
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
      R"(, sharding=\{maximal device=\d+\}|, frontend_attributes=\{_gopt_priority="\d+"(,_gopt_kernel="\d+")?\})");
  EXPECT_TRUE(std::regex_replace(trip.exported, ours, "") == contents)
      << GetParam() << ": a byte the exporter does not own changed";
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, HloRoundTripTest,
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
      if (map.empty()) instruction.clear_frontend_attributes();
    }
  }
}

TEST(HloProtoRoundTripTest, SamePlanSameStepTimeEverythingElseKept) {
  const std::string contents = LayoutModuleProtoBytes();
  const RoundTrip trip =
      CheckRoundTrip("module_tuning_data_layout.hlo.pb", contents, "hlo-proto");
  xla::HloModuleProto original;
  xla::HloModuleProto exported;
  ASSERT_TRUE(original.ParseFromString(trip.original));
  ASSERT_TRUE(exported.ParseFromString(trip.exported));
  // Every computation that no fusion calls has a schedule: each of its
  // instructions once, after its operands and control predecessors.
  absl::flat_hash_set<int64_t> fused;
  for (const auto& computation : exported.computations()) {
    for (const auto& instruction : computation.instructions()) {
      if (instruction.opcode() == "fusion") {
        fused.insert(instruction.called_computation_ids().begin(),
                     instruction.called_computation_ids().end());
      }
    }
  }
  int sharded = 0;
  for (const auto& computation : exported.computations()) {
    for (const auto& instruction : computation.instructions()) {
      if (instruction.sharding().type() == xla::OpSharding::MAXIMAL) {
        ASSERT_EQ(instruction.sharding().tile_assignment_devices_size(), 1);
        ++sharded;
      }
    }
    auto it = exported.schedule().sequences().find(computation.id());
    if (fused.contains(computation.id())) {
      EXPECT_TRUE(it == exported.schedule().sequences().end());
      continue;
    }
    ASSERT_TRUE(it != exported.schedule().sequences().end())
        << computation.name();
    ASSERT_EQ(it->second.instruction_ids_size(),
              computation.instructions_size());
    absl::flat_hash_set<int64_t> done;
    for (int64_t id : it->second.instruction_ids()) {
      for (const auto& instruction : computation.instructions()) {
        if (instruction.id() != id) continue;
        for (int64_t operand : instruction.operand_ids()) {
          EXPECT_TRUE(done.contains(operand))
              << computation.name() << ": " << instruction.name()
              << " scheduled before its operand " << operand;
        }
      }
      EXPECT_TRUE(done.insert(id).second) << id;
    }
  }
  EXPECT_GT(sharded, 0);
  ClearHloProtoDecisions(&original);
  ClearHloProtoDecisions(&exported);
  EXPECT_TRUE(SerializeDeterministically(original) ==
              SerializeDeterministically(exported))
      << "a field the exporter does not own changed";
}

// Fusion groups written as fusion instructions: the export imports as a
// graph whose fusion nodes stand for the groups, costed from their bodies.
class HloFusionRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HloFusionRoundTripTest, GroupsBecomeFusionNodesWithTheirFlops) {
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
  int fused_away = 0;
  int groups = 0;
  for (const auto& [group, count] : members) {
    if (count < 2) continue;
    fused_away += count - 1;
    ++groups;
  }
  ASSERT_GT(groups, 0);
  ExportOptions options;
  options.topology_name = topology->name;
  options.devices = devices;
  const Exporter* exporter = *exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      exporter->Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  // A group only XLA cannot fuse stays attributes, named in a warning:
  // here only groups that span a call gopt inlined into its caller.
  for (const std::string& warning : exported->warnings) {
    int32_t kernel = -1;
    if (std::sscanf(warning.c_str(), "fusion group %d ", &kernel) != 1) {
      continue;
    }
    EXPECT_THAT(warning, HasSubstr("a call gopt inlined into its caller"));
    fused_away -= members[kernel] - 1;
    --groups;
  }
  absl::StatusOr<Graph> again = importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  int fusion_nodes = 0;
  for (const Node& node : again->nodes()) {
    fusion_nodes += node.kind == OpKind::kFusion;
  }
  int original_fusions = 0;
  for (const Node& node : graph->nodes()) {
    original_fusions += node.kind == OpKind::kFusion;
  }
  EXPECT_EQ(fusion_nodes - original_fusions, groups);
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter->ReadPlan(exported->contents, *again, devices);
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_TRUE(CheckPlanFitsGraph(*again, **read, devices.size()).ok());
  // A fusion node is priced from its own operands and result, the group
  // from its members: an operand two members read is read once, a slice
  // member is charged its whole operand, the kernel takes the fusion result's
  // element type rather than its largest member's. On these files that
  // moves the step time by at most 0.25%.
  const double before = StepTime(*graph, *topology, plan);
  const double after = StepTime(*again, *topology, **read);
  EXPECT_NEAR(after, before, 0.005 * before);
  std::cout << GetParam() << ": " << groups << " fusion instructions, step "
            << before << " s as groups, " << after << " s as fusion nodes\n";
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, HloFusionRoundTripTest,
    ::testing::Values("hlo/maml_flax_train_step.hlo", "hlo/jaxrl_td_target.hlo",
                      "hlo/mixer_b16_jax_unopt.hlo",
                      "hlo/llama2_ptxla_neuron_train_tp1.hlo",
                      "hlo/nux_flow_jit_loss9581.hlo"));

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

// A row-sharded dot over 8 partitions (the SPMD importer costs it per
// shard): the export keeps the module's shardings and reads back the same
// plan, since placement is the module's own.
TEST(HloSpmdExportTest, ShardingsStayAsWrittenAndThePlanReadsBack) {
  const std::string contents = R"hlo(HloModule spmd, num_partitions=8

ENTRY main {
  lhs = f32[1024,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  rhs = f32[1024,1024]{1,0} parameter(1), sharding={replicated}
  ROOT dot = f32[1024,1024]{1,0} dot(lhs, rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[8,1]<=[8]}
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->spmd().num_partitions, 8);
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.add_device(0);
    plan.add_priority(1 + id % 3);
  }
  ExportOptions options;
  options.devices = {{"gpu:0", "gpu"}};
  const Exporter& exporter = **exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      exporter.Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->contents,
              HasSubstr("parameter(0), sharding={devices=[8,1]<=[8]}"));
  EXPECT_THAT(exported->contents, HasSubstr("sharding={replicated}"));
  EXPECT_THAT(exported->contents, Not(HasSubstr("maximal")));
  EXPECT_THAT(exported->warnings,
              Contains(HasSubstr("its shardings are kept as written")));

  absl::StatusOr<Graph> reimported =
      importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(reimported.ok()) << reimported.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> embedded =
      exporter.ReadPlan(exported->contents, *reimported, options.devices);
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  ASSERT_TRUE(embedded->has_value());
  ASSERT_EQ((*embedded)->priority_size(), plan.priority_size());
  for (int i = 0; i < plan.priority_size(); ++i) {
    EXPECT_EQ((*embedded)->device(i), 0) << i;
    EXPECT_EQ((*embedded)->priority(i), plan.priority(i)) << i;
  }
}

// A plan over a small HLO module: everything on device 0, the
// instructions named in `fused` in fusion group 0.
gopt::v1::Plan PlanFusing(const Graph& graph,
                          const std::vector<std::string>& fused) {
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    plan.add_device(0);
    plan.add_priority(0);
    plan.add_fusion_group(std::find(fused.begin(), fused.end(),
                                    graph.node(id).name) != fused.end()
                              ? 0
                              : -1);
  }
  return plan;
}

// XLA never fuses a batch norm: it expands it (BatchNormExpander) before
// fusion. A group holding a batch-norm-inference is written with the
// expansion in the fused computation, which XLA compiles as it is.
TEST(HloFusionExportTest, InferenceBatchNormIsWrittenAsXlaExpandsIt) {
  const std::string contents = R"hlo(HloModule cnn

ENTRY main {
  x = f32[2,8,6,6]{3,2,1,0} parameter(0)
  w = f32[8,8,3,3]{3,2,1,0} parameter(1)
  scale = f32[8]{0} parameter(2)
  offset = f32[8]{0} parameter(3)
  mean = f32[8]{0} parameter(4)
  variance = f32[8]{0} parameter(5)
  conv = f32[2,8,6,6]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  bn = f32[2,8,6,6]{3,2,1,0} batch-norm-inference(conv, scale, offset, mean, variance), epsilon=0.001, feature_index=1, metadata={op_name="bn"}
  zero = f32[] constant(0)
  zeros = f32[2,8,6,6]{3,2,1,0} broadcast(zero), dimensions={}
  ROOT relu = f32[2,8,6,6]{3,2,1,0} maximum(bn, zeros)
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = PlanFusing(*graph, {"conv", "bn", "relu"});
  ASSERT_TRUE(simulator::CheckFusionRules(
                  *graph, std::vector<int32_t>(plan.fusion_group().begin(),
                                               plan.fusion_group().end()))
                  .ok());
  ExportOptions options;
  options.devices = {{"gpu:0", "gpu"}};
  const Exporter& exporter = **exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      exporter.Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings, Not(Contains(HasSubstr("fusion group 0"))));
  EXPECT_THAT(exported->contents, Not(HasSubstr("batch-norm")));
  EXPECT_THAT(exported->contents, HasSubstr(R"hlo(
  %bn.epsilon = f32[] constant(0.001)
  %bn.epsilon_broadcast = f32[8]{0} broadcast(%bn.epsilon), dimensions={}
  %bn.variance_epsilon = f32[8]{0} add(%param_5.0, %bn.epsilon_broadcast)
  %bn.rsqrt = f32[8]{0} rsqrt(%bn.variance_epsilon)
  %bn.scale = f32[8]{0} multiply(%param_2.0, %bn.rsqrt)
  %bn.mean_scale = f32[8]{0} multiply(%param_4.0, %bn.scale)
  %bn.shift = f32[8]{0} subtract(%param_3.0, %bn.mean_scale)
  %bn.scale_broadcast = f32[2,8,6,6]{3,2,1,0} broadcast(%bn.scale), dimensions={1}
  %bn.shift_broadcast = f32[2,8,6,6]{3,2,1,0} broadcast(%bn.shift), dimensions={1}
  %bn.scaled = f32[2,8,6,6]{3,2,1,0} multiply(%conv, %bn.scale_broadcast)
  %bn = f32[2,8,6,6]{3,2,1,0} add(%bn.scaled, %bn.shift_broadcast), metadata={op_name="bn"})hlo"));
  EXPECT_THAT(exported->contents,
              HasSubstr("ROOT %relu = f32[2,8,6,6]{3,2,1,0} fusion(%x, %w, "
                        "%scale, %offset, %mean, %variance, %zeros), "
                        "kind=kLoop, calls=%gopt_fused_computation.0"));
  // It imports as one fusion node; the plan reads back.
  absl::StatusOr<Graph> again = importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  int fusions = 0;
  for (const Node& node : again->nodes()) {
    fusions += node.kind == OpKind::kFusion;
    EXPECT_NE(node.kind, OpKind::kNormalization) << node.name;
  }
  EXPECT_EQ(fusions, 1);
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter.ReadPlan(exported->contents, *again, options.devices);
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
}

// A batch-norm-training (or -grad) cannot be written that way (its outputs
// leave through get-tuple-elements): its group stays attributes, with a
// warning that says why.
TEST(HloFusionExportTest, TrainingBatchNormGroupStaysAttributes) {
  const std::string contents = R"hlo(HloModule train

ENTRY main {
  x = f32[2,8,6,6]{3,2,1,0} parameter(0)
  scale = f32[8]{0} parameter(1)
  offset = f32[8]{0} parameter(2)
  twice = f32[2,8,6,6]{3,2,1,0} add(x, x)
  bn = (f32[2,8,6,6]{3,2,1,0}, f32[8]{0}, f32[8]{0}) batch-norm-training(twice, scale, offset), epsilon=0.001, feature_index=1
  ROOT y = f32[2,8,6,6]{3,2,1,0} get-tuple-element(bn), index=0
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = PlanFusing(*graph, {"twice", "bn"});
  ExportOptions options;
  options.devices = {{"gpu:0", "gpu"}};
  absl::StatusOr<ExportResult> exported =
      (*exporters.Find("hlo"))->Export(contents, *graph, plan, options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings,
              Contains("fusion group 0 (twice, bn) is written as frontend "
                       "attribute _gopt_kernel only, not as a fusion "
                       "instruction: 'bn' is a batch-norm-training, which XLA "
                       "expands before fusion and never fuses"));
  EXPECT_THAT(exported->contents, Not(HasSubstr("fusion(")));
  EXPECT_THAT(exported->contents, HasSubstr("batch-norm-training(twice"));
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
