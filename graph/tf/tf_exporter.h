#ifndef GOPT_GRAPH_TF_TF_EXPORTER_H_
#define GOPT_GRAPH_TF_TF_EXPORTER_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/exporter.h"

namespace gopt::graph {

// The TensorFlow device string of the topology's device `index`:
// "/job:localhost/replica:0/task:0/device:GPU:K", where the kind (CPU, GPU
// or TPU) is the device's and K counts the topology's devices of that kind
// before it.
std::string TfDeviceString(absl::Span<const ExportDevice> devices, int index);

// Writes gopt's decisions into a TensorFlow GraphDef (binary or text
// format, "graphdef") or a TF.js model.json ("tfjs") as TensorFlow reads
// them: NodeDef.device is the full device string (TfDeviceString), a fused
// node gets the `_XlaCluster` attribute "gopt_kernel_K" (as TF's
// auto-clustering marks the nodes of one XLA cluster), and the schedule is
// a `_gopt_priority` int attribute; with ScheduleAs::kControlDeps also
// control inputs ("^name") from each op to the next op of its device in a
// dependency-respecting priority order (a topological order, so no cycle
// can form). A graph with TF1 loops gets no control inputs, with a
// warning: a control input may not cross a loop frame.
// Everything else (attributes, inputs, library, unknown fields; for TF.js
// every other JSON key) stays as it was. A text GraphDef with fields gopt's
// schema does not declare is InvalidArgument (they would be lost).
std::unique_ptr<Exporter> NewGraphDefExporter();
std::unique_ptr<Exporter> NewTfjsExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_TF_TF_EXPORTER_H_
