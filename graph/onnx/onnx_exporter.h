#ifndef GOPT_GRAPH_ONNX_ONNX_EXPORTER_H_
#define GOPT_GRAPH_ONNX_ONNX_EXPORTER_H_

#include <memory>

#include "graph/exporter.h"

namespace gopt::graph {

// Writes gopt's decisions into an ONNX model with IR version 11 multi-device
// metadata: ModelProto.configuration gets a DeviceConfigurationProto named
// after the topology with its device names, every node of the main graph a
// NodeDeviceConfigurationProto whose sharding specs put each output whole
// on the node's device, and node metadata_props "gopt.priority" and
// "gopt.kernel" (fusion group, only for fused nodes). Initializers and
// graph inputs, which have no device configuration, carry "gopt.device",
// "gopt.priority" and "gopt.kernel" in their own metadata_props. The model
// metadata_props "gopt.configuration" names the configuration. ir_version
// becomes at least 11. Layouts cannot be expressed in ONNX: each export
// with layout decisions warns how many were not written. Everything else in
// the file (initializers, external-data references, attributes, doc
// strings, unknown fields) is kept as it was.
std::unique_ptr<Exporter> NewOnnxExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_ONNX_ONNX_EXPORTER_H_
