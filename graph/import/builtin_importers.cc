#include "graph/import/builtin_importers.h"

#include "graph/hlo/hlo_importers.h"
#include "graph/native/native_importer.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/tf/tf_importers.h"

namespace gopt::graph {

void RegisterBuiltinImporters(ImporterRegistry* registry) {
  // Binary protobuf formats overlap on the wire, so each Sniff checks
  // structure; the TpuGraphs wrapper must be tried before the bare
  // HloModuleProto it contains.
  registry->Register(NewTpuGraphsImporter());
  registry->Register(NewHloProtoImporter());
  registry->Register(NewOnnxImporter());
  registry->Register(NewGraphDefImporter());
  registry->Register(NewGoptImporter());
  registry->Register(NewTfjsImporter());
  registry->Register(NewHloTextImporter());
}

}  // namespace gopt::graph
