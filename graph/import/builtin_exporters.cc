#include "graph/import/builtin_exporters.h"

#include "graph/hlo/hlo_exporter.h"
#include "graph/hlo/hlo_proto_exporter.h"
#include "graph/native/native_exporter.h"
#include "graph/onnx/onnx_exporter.h"
#include "graph/tf/tf_exporter.h"

namespace gopt::graph {

void RegisterBuiltinExporters(ExporterRegistry* registry) {
  registry->Register(NewGoptExporter());
  registry->Register(NewOnnxExporter());
  registry->Register(NewGraphDefExporter());
  registry->Register(NewTfjsExporter());
  registry->Register(NewHloTextExporter());
  registry->Register(NewHloProtoExporter());
  registry->ExplainMissing(
      "tpugraphs",
      "a TpuGraphs file is a dataset of measured compiler configurations "
      "(the module and its runtimes), not an input a compiler reads; apply "
      "the plan to the HLO module the dataset was made from (hlo or "
      "hlo-proto) instead");
}

}  // namespace gopt::graph
