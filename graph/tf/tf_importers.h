#ifndef GOPT_GRAPH_TF_TF_IMPORTERS_H_
#define GOPT_GRAPH_TF_TF_IMPORTERS_H_

#include <memory>

#include "graph/importer.h"

namespace gopt::graph {

// The TensorFlow GraphDef importer, format "graphdef". Reads a frozen
// GraphDef either as binary protobuf or as protobuf text format (chosen by
// sniffing the contents) and lowers it as tf::LowerGraphDef describes: TF1
// while loops recorded with their back edges cut, shapes from
// `_output_shapes`, constants, placeholders or inference, XLA-style kinds
// and attributes, costs from the op catalog. Sniff accepts a binary GraphDef
// whose first NodeDef has a node name and a TensorFlow op name, or text that
// starts with `node {` (after comments). Import errors are InvalidArgument
// naming the node and field (or the text position); never crashes on any
// input. Stateless and thread-safe.
std::unique_ptr<Importer> NewGraphDefImporter();

// The TF.js graph-model importer, format "tfjs". Reads a model.json: its
// `modelTopology` is the GraphDef's protobuf JSON mapping (unknown fields
// ignored); weights are not needed, as each Const's shape comes from the
// `weightsManifest` (or its tensorShape) and each input's shape from the
// `signature` when the placeholder leaves it open. Constant values are not
// in model.json, so shapes that depend on them may stay unknown and take
// ImportOptions::default_symbolic_dim (with a warning). Sniff accepts a JSON
// object containing "modelTopology". Errors as for NewGraphDefImporter.
// Stateless and thread-safe.
std::unique_ptr<Importer> NewTfjsImporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_TF_TF_IMPORTERS_H_
