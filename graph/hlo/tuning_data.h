#ifndef GOPT_GRAPH_HLO_TUNING_DATA_H_
#define GOPT_GRAPH_HLO_TUNING_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/hlo/hlo_lowering.h"
#include "graph/importer.h"

namespace gopt::graph::hlo {

// Tile configuration features per config: kernel, output and input bounds,
// each as 6 values (0-padded) + sum + product (an absent list has sum 0 and
// product 0), as in the TpuGraphs `config_feat`.
inline constexpr int kTileConfigFeatures = 24;
// Layout configuration features per configurable node: output, input and
// kernel layouts, 6 dims each, -1 padded (all -1 = compiler default), as in
// the TpuGraphs `node_config_feat`.
inline constexpr int kLayoutNodeFeatures = 18;

// One measured compiler configuration of a module.
struct TuningConfig {
  // kTileConfigFeatures values for a tile run; empty for a layout run.
  std::vector<float> tile_features;
  // kLayoutNodeFeatures values per configurable node, node-major (node k at
  // [k * 18, k * 18 + 18)); empty when the module has no configurable nodes.
  std::vector<float> layout_features;
  int64_t runtime_ns = 0;  // profile.compute_time_ns
  bool is_default = false;
  // The file's error code: non-zero when the configuration failed to
  // compile or run (its runtime is then 0).
  int64_t error = 0;
};

// One module of a tuning data set with its graph and configurations.
struct TuningModule {
  std::string name;
  std::string fingerprint;
  // The module lowered like the "tpugraphs" importer does: layout
  // configurable exactly for the nodes in config_index_to_node.
  Graph graph;
  // config_index_to_node mapped onto `graph`: entry k is where the
  // configurable instruction k is (a subgraph path for while bodies). The
  // file's indices count instructions over all computations in order.
  std::vector<HloNodeLocation> configurable_nodes;
  std::vector<TuningConfig> configs;
};

// A TpuGraphs tuning data set: a tpu_graphs.TuningData (several modules,
// usually tile data) or a single tpu_graphs.ModuleTuningData (usually layout
// data). A plain value; safe to read from many threads.
struct TuningDataset {
  std::vector<TuningModule> modules;
};

// Parses a serialized TuningData or ModuleTuningData (told apart by their
// wire structure) and lowers every module. Errors are InvalidArgument naming
// the module and field ("module 'fusion.232' run 5 layout_config: 63 nodes
// for 62 configurable nodes"); config_index_to_node entries outside the
// module, or naming an instruction that does not become a node, are errors;
// more than 2^28 layout feature values in one module is ResourceExhausted.
// Thread-safe.
absl::StatusOr<TuningDataset> ReadTuningData(absl::string_view bytes,
                                             const ImportOptions& options);

// Cheap wire-structure check: true for a TuningData (field 1 holding a
// ModuleTuningData) or a ModuleTuningData (field 1 holding an HloModuleProto
// whose field 1 is a printable name). A bare HloModuleProto is rejected (its
// field 1 is the name itself).
bool LooksLikeTuningData(absl::string_view bytes);

// What parsing `bytes` (a TuningData or ModuleTuningData, as
// ReadTuningData tells them apart) costs; the nodes are the instructions
// of every module's computations.
absl::StatusOr<ParseCost> TuningDataParseCost(absl::string_view bytes,
                                              const ParseCostLimits& limits);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_TUNING_DATA_H_
