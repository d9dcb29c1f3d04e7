#include "graph/import/builtin_exporters.h"

#include "graph/hlo/hlo_exporter.h"
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
}

}  // namespace gopt::graph
