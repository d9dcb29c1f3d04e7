#ifndef GOPT_TRAINING_GO_CORPUS_H_
#define GOPT_TRAINING_GO_CORPUS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

// The graphs GO policies are pre-trained and evaluated on (gopt-train only;
// not linked into the server).
namespace gopt::policy::go {

// Real graphs under ../shared/data held out from training (paths relative
// to the data directory) and the held-out generator family: evaluation
// only, never trained on.
const std::vector<std::string>& HeldOutRealGraphs();
inline constexpr char kHeldOutFamily[] = "transformer_xl";

// A graph file (any importable format) or "gen:PRESET" for a generator
// preset. Errors: the importer's or the generator's.
absl::StatusOr<graph::Graph> LoadGraphSource(const std::string& source);

// A graph of the training corpus.
struct CorpusGraph {
  std::string label;  // "gen:gnmt2-small", "hlo/jaxrl_td_target.hlo", ...
  std::shared_ptr<const graph::Graph> graph;
};

struct CorpusOptions {
  // The shared data directory (hlo/, onnx/, tf_graphdef/, tfjs/); empty =
  // generated graphs only.
  std::string data_dir;
  // Graphs with more nodes are left out (training cost grows with size).
  int max_nodes = 8000;
};

// The pre-training corpus: every generator preset of every family except
// kHeldOutFamily, plus further sizes of those families (see training.cc),
// plus every graph under data_dir that imports and is not held out. Graphs
// over max_nodes or failing to import are skipped and listed in `skipped`
// (with the reason). Deterministic. Errors: only a generator failure.
absl::StatusOr<std::vector<CorpusGraph>> BuildPretrainingCorpus(
    const CorpusOptions& options, std::vector<std::string>* skipped);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_CORPUS_H_
