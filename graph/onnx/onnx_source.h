#ifndef GOPT_GRAPH_ONNX_ONNX_SOURCE_H_
#define GOPT_GRAPH_ONNX_ONNX_SOURCE_H_

#include <string>

#include "onnx/onnx.pb.h"

namespace gopt::graph {

// The name by which gopt identifies an ONNX node in the caller's file (the
// SourceElement::name of the nodes imported from it): the node's name, or
// its first output where the node is unnamed (outputs are unique in a
// graph); empty for an unnamed node without outputs. The importer and the
// exporter both use it, so a decision always finds its node again.
inline const std::string& OnnxSourceName(const ::gopt::onnx::NodeProto& node) {
  if (!node.name().empty() || node.output_size() == 0) return node.name();
  return node.output(0);
}

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_ONNX_ONNX_SOURCE_H_
