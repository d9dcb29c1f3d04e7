#ifndef GOPT_TRAINING_GO_RANDOM_CORPUS_H_
#define GOPT_TRAINING_GO_RANDOM_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/topology.h"
#include "training/go/corpus.h"

// Randomized training data for GO policies (gopt-train only): generated
// graphs of random sizes and random machines.
namespace gopt::policy::go {

// A random machine: 2..8 devices, each a V100, A100 or H100 (the preset
// topologies' device profiles; a mixed machine takes two kinds), all pairs
// linked by PCIe (12 GB/s, 10 us) or NVLink (50, 300 or 450 GB/s by the
// slower device of the pair, 3-5 us). Named "rand<index>-<devices>x-<kinds>-
// <pcie|nvlink>". Deterministic for (seed, index). Errors: the presets'.
absl::StatusOr<simulator::Topology> RandomTopology(uint64_t seed, int index);

// `count` generated graphs of random sizes: families other than
// kHeldOutFamily take turns (in a seeded order), and layers, batch,
// sequence length, width and image size are each drawn uniformly between
// the smallest and largest value of that family's presets (resolved
// defaults; widths in steps of 64 where both ends are multiples of 64, as
// the transformer families require). A graph over `max_nodes` is shrunk within
// its family (fewer layers, then fewer unrolled steps, down to the generator's
// minimum), so a small cap keeps every family that has a legal size under it; a
// family whose draws stay over the cap or are rejected 3 times leaves the turns
// (inception_v3's size is fixed). At most 20 times `count` draws.
// Deterministic for `seed`. Errors: a generator failure other than a
// rejected size.
absl::StatusOr<std::vector<CorpusGraph>> RandomGeneratedGraphs(int count,
                                                               int max_nodes,
                                                               uint64_t seed);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_RANDOM_CORPUS_H_
