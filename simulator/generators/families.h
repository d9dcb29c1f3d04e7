#ifndef GOPT_SIMULATOR_GENERATORS_FAMILIES_H_
#define GOPT_SIMULATOR_GENERATORS_FAMILIES_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/generators/generators.h"

namespace gopt::simulator::generators {

// The graph name for resolved options: family, then each size that applies
// ("gnmt_l8_b128_s100_h1024", "amoebanet_l4_b32_h64_i224_seed7").
std::string GeneratedGraphName(const GeneratorOptions& options);

// One builder per model family, each in its own .cc file. They take options
// already resolved by ResolveGeneratorOptions (every size set and in range)
// and return the training-step graph, or the builder's error. Stateless and
// thread-safe.

// Inception-v3 (Szegedy et al. 2016), TF-slim layout: stem, 3x block A,
// reduction B, 4x block C (factorized 7x7), reduction D, 2x block E.
absl::StatusOr<graph::Graph> BuildInceptionV3(const GeneratorOptions& options);

// ResNet-50/101/152 v1.5 (stride in the 3x3 conv), bottleneck blocks.
absl::StatusOr<graph::Graph> BuildResNet(const GeneratorOptions& options);

// AmoebaNet-like network: NASNet-style normal and reduction cells whose
// wiring (inputs and ops of each of the 5 pairwise combinations) is drawn
// from options.seed.
absl::StatusOr<graph::Graph> BuildAmoebaNet(const GeneratorOptions& options);

// LSTM language model unrolled over options.seq steps.
absl::StatusOr<graph::Graph> BuildRnnLm(const GeneratorOptions& options);

// GNMT (Wu et al. 2016): bidirectional bottom encoder layer, residual
// connections from the third layer, attention from the bottom decoder layer
// fed to every decoder layer, unrolled over options.seq source and target
// steps.
absl::StatusOr<graph::Graph> BuildGnmt(const GeneratorOptions& options);

// Transformer-XL (Dai et al. 2019): segment-level recurrence memory and
// relative positional attention.
absl::StatusOr<graph::Graph> BuildTransformerXl(
    const GeneratorOptions& options);

// BERT pre-training (Devlin et al. 2019): embeddings, encoder layers, masked
// LM head with the tied embedding and next-sentence head.
absl::StatusOr<graph::Graph> BuildBert(const GeneratorOptions& options);

// WaveNet (van den Oord et al. 2016): dilated causal convolution stacks with
// gated activations, residual and skip connections.
absl::StatusOr<graph::Graph> BuildWaveNet(const GeneratorOptions& options);

}  // namespace gopt::simulator::generators

#endif  // GOPT_SIMULATOR_GENERATORS_FAMILIES_H_
