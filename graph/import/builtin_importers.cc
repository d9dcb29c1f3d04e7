#include "graph/import/builtin_importers.h"

#include "graph/hlo/hlo_importers.h"
#include "graph/native/native_importer.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/tf/tf_importers.h"

namespace gopt::graph {

void RegisterBuiltinImporters(ImporterRegistry* registry) {
  // Binary protobuf formats overlap on the wire (a gopt.v1.Graph even
  // passes a light HloModuleProto check), so the strictest sniffs go first:
  // gopt parses fully and needs canonical op-kind names; the TpuGraphs
  // wrapper must be tried before the bare HloModuleProto it contains.
  registry->Register(NewGoptImporter());
  registry->Register(NewTpuGraphsImporter());
  registry->Register(NewHloProtoImporter());
  registry->Register(NewOnnxImporter());
  registry->Register(NewGraphDefImporter());
  registry->Register(NewTfjsImporter());
  registry->Register(NewHloTextImporter());
}

}  // namespace gopt::graph
