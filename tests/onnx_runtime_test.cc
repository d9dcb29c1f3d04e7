// ONNX Runtime, a runtime gopt did not write, loads every ONNX model of
// ../shared/data as gopt exports it (IR 11 device configuration, metadata
// props) and computes the same outputs as from the original on seeded
// inputs (tests/onnx_runtime/compare_outputs.js). onnxruntime-node comes
// from npm through scripts/install-deps.sh.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/decisions.h"
#include "graph/import/builtin_exporters.h"
#include "graph/import/builtin_importers.h"
#include "gtest/gtest.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/topology.h"
#include "tests/util/child_process.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

std::string NpmModules() {
  const char* dir = std::getenv("GOPT_NPM_DIR");
  return absl::StrCat(dir != nullptr ? dir : GOPT_NPM_DIR_DEFAULT,
                      "/node_modules");
}

class OnnxRuntimeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxRuntimeTest, LoadsTheExportAndComputesTheSameOutputs) {
  ASSERT_EQ(access(GOPT_NODE_BINARY, X_OK), 0)
      << "node.js not found (" << GOPT_NODE_BINARY
      << "): run scripts/install-deps.sh, then reconfigure";
  const std::string modules = NpmModules();
  ASSERT_EQ(access((modules + "/onnxruntime-node/package.json").c_str(), R_OK),
            0)
      << "onnxruntime-node is not installed under " << modules
      << ": run scripts/install-deps.sh (or set GOPT_NPM_DIR)";
  const std::string contents = testing::ReadSharedData(GetParam());
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  graph::ImportOptions import_options;
  std::vector<std::string> dims;
  for (const auto& [name, value] : testing::SharedDataDims(GetParam())) {
    import_options.symbolic_dims[name] = value;
    dims.push_back(absl::StrCat("\"", name, "\": ", value));
  }
  absl::StatusOr<graph::Graph> graph =
      importers.Import(contents, "onnx", import_options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("v100x4-nvlink");
  ASSERT_TRUE(topology.ok());
  simulator::Plan plan = simulator::DefaultPlan(*graph, *topology);
  plan.priority.assign(graph->num_nodes(), 0);
  for (graph::NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.device[id] = id % topology->num_devices();
    plan.priority[id] = (id * 7) % 16;
  }
  simulator::KeepDeviceConstraints(*graph, *topology, &plan.device);
  graph::ExporterRegistry exporters;
  graph::RegisterBuiltinExporters(&exporters);
  graph::ExportOptions options;
  options.topology_name = topology->name;
  for (int i = 0; i < topology->num_devices(); ++i) {
    options.devices.push_back({absl::StrCat("gpu:", i), "gpu"});
  }
  absl::StatusOr<graph::ExportResult> exported =
      (*exporters.Find("onnx"))
          ->Export(contents, *graph, simulator::PlanToProto(plan), options);
  ASSERT_TRUE(exported.ok()) << exported.status();

  const std::string path =
      absl::StrCat(::testing::TempDir(), "/gopt_ort_", getpid(), "_",
                   GetParam().substr(GetParam().find('/') + 1));
  {
    std::ofstream out(path, std::ios::binary);
    out << exported->contents;
    ASSERT_TRUE(out.good()) << path;
  }
  testing::ChildProcess node(
      GOPT_NODE_BINARY,
      {GOPT_COMPARE_SCRIPT, testing::SharedDataPath(GetParam()), path,
       absl::StrCat(R"({"sr": 16000)",
                    dims.empty() ? ""
                                 : absl::StrCat(R"(, "dims": {)",
                                                absl::StrJoin(dims, ", "), "}"),
                    "}")},
      {absl::StrCat("NODE_PATH=", modules)});
  EXPECT_EQ(node.Wait(), 0) << node.log();
  EXPECT_NE(node.log().find("same"), std::string::npos) << node.log();
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, OnnxRuntimeTest,
    ::testing::Values("onnx/light_resnet50.onnx", "onnx/light_shufflenet.onnx",
                      "onnx/light_squeezenet.onnx",
                      "onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                      "onnx/silero_vad_legacy.onnx"));

}  // namespace
}  // namespace gopt
