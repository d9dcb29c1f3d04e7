#include "graph/onnx/onnx_importer.h"

#include <iostream>

#include "gtest/gtest.h"
#include "tests/util/shared_data.h"

namespace gopt::graph {
namespace {

void Dump(const std::string& file, ImportOptions options) {
  std::string contents = gopt::testing::ReadSharedData(file);
  auto importer = NewOnnxImporter();
  std::cout << file << " sniff=" << importer->Sniff(contents) << "\n";
  absl::StatusOr<Graph> graph = importer->Import(contents, options);
  if (!graph.ok()) {
    std::cout << "ERROR " << graph.status() << "\n";
    return;
  }
  std::cout << "nodes=" << graph->num_nodes() << " edges=" << graph->num_edges()
            << " flops=" << graph->total_flops()
            << " subgraphs=" << graph->subgraphs().size() << "\n";
  for (const auto& w : graph->warnings()) std::cout << "  warn: " << w << "\n";
  std::map<std::string, double> by_kind;
  for (const Node& n : graph->nodes())
    by_kind[std::string(OpKindName(n.kind))] += n.flops;
  for (auto& [k, f] : by_kind) std::cout << "  " << k << " " << f << "\n";
}

TEST(OnnxImporterTest, Scratch) {
  ImportOptions options;
  Dump("onnx/light_resnet50.onnx", options);
  Dump("onnx/light_shufflenet.onnx", options);
  Dump("onnx/light_squeezenet.onnx", options);
  Dump("onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx", options);
  options.symbolic_dims["p2o.DynamicDimension.1"] = 48;
  options.symbolic_dims["p2o.DynamicDimension.2"] = 192;
  Dump("onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx", options);
  Dump("onnx/silero_vad_legacy.onnx", options);
  options.symbolic_dims["sequence"] = 512;
  Dump("onnx/silero_vad_legacy.onnx", options);
}

}  // namespace
}  // namespace gopt::graph
