#ifndef GOPT_SIMULATOR_GENERATORS_GENERATORS_H_
#define GOPT_SIMULATOR_GENERATORS_GENERATORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace gopt::simulator::generators {

// What to generate. Every size left at 0 takes the family's default; an
// option that does not apply to a family must stay 0. Defaults and ranges
// per family (InvalidArgument outside them):
//
// Each entry is "default (range)"; batch is 1-4096 everywhere and "-" marks
// an option that does not apply.
//   inception_v3:   layers -, batch 32, seq -, hidden -, image 299 (75-1024)
//   resnet50:       layers 50 (50, 101 or 152), batch 32, seq -, hidden -,
//                   image 224 (32-1024)
//   amoebanet:      layers 4 normal cells per stack (1-16), batch 32, seq -,
//                   hidden 64 (8-1024), image 224 (32-1024)
//   rnnlm:          layers 2 (1-16), batch 64, seq 32 (1-4096),
//                   hidden 2048 (8-16384), image -
//   gnmt:           layers 4 per side (2-16), batch 128, seq 32 (1-2048),
//                   hidden 1024 (8-16384), image -
//   transformer_xl: layers 16 (1-64), batch 32, seq 128 = segment = memory
//                   (1-8192), hidden 512 (64-8192, x64), image -
//   bert:           layers 12 (1-64), batch 32, seq 128 (1-8192),
//                   hidden 768 (64-8192, x64), image -
//   wavenet:        layers 30 (1-120; dilations 1..512, cycling), batch 4,
//                   seq 16384 samples (16-1048576), hidden 64 (8-4096), image -
//
// `hidden` is the model width: the LSTM size (rnnlm, gnmt), d_model
// (transformer_xl, bert; a multiple of 64, one attention head per 64),
// the residual channels (wavenet, with 4x that for skip connections) or the
// first stack's filters (amoebanet). `image_size` is the square input
// resolution of the convolutional families.
struct GeneratorOptions {
  std::string family;  // one of GeneratorFamilies()
  int layers = 0;      // 0 = family default
  int batch = 0;       // 0 = family default
  int seq = 0;         // unroll / sequence / audio length; 0 = default
  int hidden = 0;      // model width; 0 = family default
  int image_size = 0;  // convolutional families; 0 = family default
  // Picks the AmoebaNet cell wiring (which hidden states each cell op reads
  // and which op it is). The other families have fixed architectures and
  // ignore it. Default 0.
  uint64_t seed = 0;
};

// The family names, sorted: amoebanet, bert, gnmt, inception_v3, resnet50,
// rnnlm, transformer_xl, wavenet.
std::vector<std::string> GeneratorFamilies();

// `options` with every 0 size replaced by the family's default, after
// checking it. InvalidArgument for an unknown family (listing the valid
// ones), an option that does not apply to the family, or a value outside
// the family's range (naming the option, the value and the range).
absl::StatusOr<GeneratorOptions> ResolveGeneratorOptions(
    const GeneratorOptions& options);

// Builds the op-level training-step graph (forward pass, backward pass and
// optimizer update, all f32) of one model family: real shapes and dtypes,
// canonical op kinds with TensorFlow op names, attributes, and costs from
// graph::ComputeOpCost. Forward nodes carry the model's names; backward
// nodes are under "gradients/", optimizer updates under "train/". The graph
// is named after the resolved options (e.g. "gnmt_l8_b128_s100_h1024") and
// has format "generated". Recurrent families are unrolled over `seq`, as
// TensorFlow 1 static graphs are, so their size grows linearly in seq and
// layers.
//
// Deterministic: the same options give the same graph (and byte-identical
// graph::SerializeGraph output). Errors: those of ResolveGeneratorOptions,
// and ResourceExhausted when the graph would exceed graph::GraphLimits.
// Thread-safe (no shared state); the work is linear in the node count
// (about 1 s for the 84,699-node gnmt8-80k preset on this 2-core host).
absl::StatusOr<graph::Graph> GenerateModelGraph(
    const GeneratorOptions& options);

// A named, documented option set of the pre-training / benchmark corpus.
struct GeneratorPreset {
  std::string name;         // e.g. "gnmt8-large"
  std::string description;  // one line: what it is and why it is there
  GeneratorOptions options;
  // Expected outcome of the framework-default plan (everything on device 0)
  // on PresetTopology("v100x4-nvlink") (16 GB V100s): true when the
  // training step does not fit one device, so placement must split it.
  bool single_v100_oom = false;
};

// The recommended presets: for every family a small configuration where one
// V100 holds the whole step and a large one where it does not, plus gnmt
// with 2, 4 and 8 layers and an 80,000+-node gnmt8 graph. Names are unique.
//
//   preset                options                         nodes  1 V100 peak
//   inception_v3-small    batch 32                         2,467   4.3 GB fits
//   inception_v3-large    batch 256                        2,467  33.3 GB OOM
//   resnet50-small        batch 32                         1,388   4.4 GB fits
//   resnet50-large        batch 256                        1,388  33.4 GB OOM
//   amoebanet-small       N=2, F=32, batch 32              5,477   2.3 GB fits
//   amoebanet-large       N=6, F=128, batch 64            11,177  28.5 GB OOM
//   rnnlm-small           2x1024, 20 steps, batch 32       1,616   1.3 GB fits
//   rnnlm-large           4x4096, 96 steps, batch 256     14,092  24.4 GB OOM
//   gnmt2-small           2 layers, 16 steps, batch 32     3,579   2.9 GB fits
//   gnmt4-medium          4 layers, 32 steps, batch 64    11,803   3.9 GB fits
//   gnmt8-large           8 layers, 100 steps, batch 256  66,303  23.3 GB OOM
//   gnmt8-80k             8 layers, 128 steps, batch 192  84,699  22.6 GB OOM
//   transformer_xl-small  4 layers, d 256, seq 64, b 16    1,268   0.5 GB fits
//   transformer_xl-large  18 layers, d 1024, seq 384, b 24 5,454  26.2 GB OOM
//   bert-small            4 layers, d 256, seq 128, b 32   1,527   0.6 GB fits
//   bert-large            24 layers, d 1024, seq 512, b 32 7,707  43.5 GB OOM
//   wavenet-small         20 layers, 8192 samples, b 2     1,737   0.4 GB fits
//   wavenet-large         40 layers, 65536 samples, b 8    3,417  24.3 GB OOM
//
// (Peak memory of the framework-default plan in the simulator, whose V100
// holds 16 GiB; the OOM column is checked by generators_test.)
std::vector<GeneratorPreset> GeneratorPresets();

// The preset called `name`; NotFound listing the preset names otherwise.
absl::StatusOr<GeneratorPreset> FindGeneratorPreset(absl::string_view name);

}  // namespace gopt::simulator::generators

#endif  // GOPT_SIMULATOR_GENERATORS_GENERATORS_H_
