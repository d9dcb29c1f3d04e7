#include "simulator/generators/generators.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "simulator/generators/families.h"

namespace gopt::simulator::generators {
namespace {

// An inclusive range; {0, 0} means the option does not apply.
struct Range {
  int min = 0;
  int max = 0;

  bool applies() const { return max > 0; }
};

struct FamilySpec {
  const char* name;
  int default_layers;
  Range layers;
  int default_batch;
  Range batch;
  int default_seq;
  Range seq;
  int default_hidden;
  Range hidden;
  int hidden_multiple;  // hidden must be a multiple of this
  int default_image_size;
  Range image_size;
  absl::StatusOr<graph::Graph> (*build)(const GeneratorOptions&);
};

constexpr Range kNone{0, 0};
constexpr Range kBatch{1, 4096};
constexpr Range kImage{32, 1024};

// Sorted by name; see the table in generators.h.
const FamilySpec kFamilies[] = {
    {"amoebanet",
     4,
     {1, 16},
     32,
     kBatch,
     0,
     kNone,
     64,
     {8, 1024},
     1,
     224,
     kImage,
     &BuildAmoebaNet},
    {"bert",
     12,
     {1, 64},
     32,
     kBatch,
     128,
     {1, 8192},
     768,
     {64, 8192},
     64,
     0,
     kNone,
     &BuildBert},
    {"gnmt",
     4,
     {2, 16},
     128,
     kBatch,
     32,
     {1, 2048},
     1024,
     {8, 16384},
     1,
     0,
     kNone,
     &BuildGnmt},
    {"inception_v3",
     0,
     kNone,
     32,
     kBatch,
     0,
     kNone,
     0,
     kNone,
     1,
     299,
     {75, 1024},
     &BuildInceptionV3},
    {"resnet50",
     50,
     {50, 152},
     32,
     kBatch,
     0,
     kNone,
     0,
     kNone,
     1,
     224,
     kImage,
     &BuildResNet},
    {"rnnlm",
     2,
     {1, 16},
     64,
     kBatch,
     32,
     {1, 4096},
     2048,
     {8, 16384},
     1,
     0,
     kNone,
     &BuildRnnLm},
    {"transformer_xl",
     16,
     {1, 64},
     32,
     kBatch,
     128,
     {1, 8192},
     512,
     {64, 8192},
     64,
     0,
     kNone,
     &BuildTransformerXl},
    {"wavenet",
     30,
     {1, 120},
     4,
     kBatch,
     16384,
     {16, 1048576},
     64,
     {8, 4096},
     1,
     0,
     kNone,
     &BuildWaveNet},
};

const FamilySpec* FindFamily(absl::string_view name) {
  for (const FamilySpec& spec : kFamilies) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

absl::Status ResolveOne(const FamilySpec& spec, absl::string_view option,
                        Range range, int default_value, int multiple,
                        int* value) {
  if (!range.applies()) {
    if (*value != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", option, "' does not apply to ", spec.name,
                       " (got ", *value, "; leave it 0)"));
    }
    return absl::OkStatus();
  }
  if (*value == 0) *value = default_value;
  if (*value < range.min || *value > range.max || *value % multiple != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.name, " option '", option, "' is ", *value, "; it must be in [",
        range.min, ", ", range.max, "]",
        multiple > 1 ? absl::StrCat(" and a multiple of ", multiple) : ""));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> GeneratorFamilies() {
  std::vector<std::string> names;
  for (const FamilySpec& spec : kFamilies) names.emplace_back(spec.name);
  return names;
}

absl::StatusOr<GeneratorOptions> ResolveGeneratorOptions(
    const GeneratorOptions& options) {
  const FamilySpec* spec = FindFamily(options.family);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown model family '", options.family,
        "'; valid families: ", absl::StrJoin(GeneratorFamilies(), ", ")));
  }
  GeneratorOptions resolved = options;
  if (options.family == "resnet50" && options.layers != 0 &&
      options.layers != 50 && options.layers != 101 && options.layers != 152) {
    return absl::InvalidArgumentError(
        absl::StrCat("resnet50 option 'layers' is ", options.layers,
                     "; it must be 50, 101 or 152"));
  }
  for (absl::Status s :
       {ResolveOne(*spec, "layers", spec->layers, spec->default_layers, 1,
                   &resolved.layers),
        ResolveOne(*spec, "batch", spec->batch, spec->default_batch, 1,
                   &resolved.batch),
        ResolveOne(*spec, "seq", spec->seq, spec->default_seq, 1,
                   &resolved.seq),
        ResolveOne(*spec, "hidden", spec->hidden, spec->default_hidden,
                   spec->hidden_multiple, &resolved.hidden),
        ResolveOne(*spec, "image_size", spec->image_size,
                   spec->default_image_size, 1, &resolved.image_size)}) {
    if (!s.ok()) return s;
  }
  return resolved;
}

std::string GeneratedGraphName(const GeneratorOptions& options) {
  std::string name = options.family;
  auto add = [&name](absl::string_view tag, int value) {
    if (value != 0) absl::StrAppend(&name, "_", tag, value);
  };
  add("l", options.layers);
  add("b", options.batch);
  add("s", options.seq);
  add("h", options.hidden);
  add("i", options.image_size);
  if (options.family == "amoebanet")
    absl::StrAppend(&name, "_seed", options.seed);
  return name;
}

absl::StatusOr<graph::Graph> GenerateModelGraph(
    const GeneratorOptions& options) {
  absl::StatusOr<GeneratorOptions> resolved = ResolveGeneratorOptions(options);
  if (!resolved.ok()) return resolved.status();
  return FindFamily(resolved->family)->build(*resolved);
}

std::vector<GeneratorPreset> GeneratorPresets() {
  auto preset = [](std::string name, std::string description,
                   GeneratorOptions options, bool oom) {
    return GeneratorPreset{std::move(name), std::move(description),
                           std::move(options), oom};
  };
  auto opts = [](std::string family, int layers, int batch, int seq, int hidden,
                 int image_size) {
    GeneratorOptions o;
    o.family = std::move(family);
    o.layers = layers;
    o.batch = batch;
    o.seq = seq;
    o.hidden = hidden;
    o.image_size = image_size;
    return o;
  };
  return {
      preset("inception_v3-small", "Inception-v3, batch 32: fits one V100",
             opts("inception_v3", 0, 32, 0, 0, 0), false),
      preset("inception_v3-large",
             "Inception-v3, batch 256: activations exceed one V100",
             opts("inception_v3", 0, 256, 0, 0, 0), true),
      preset("resnet50-small", "ResNet-50, batch 32: fits one V100",
             opts("resnet50", 0, 32, 0, 0, 0), false),
      preset("resnet50-large",
             "ResNet-50, batch 256: activations exceed one V100",
             opts("resnet50", 0, 256, 0, 0, 0), true),
      preset("amoebanet-small",
             "AmoebaNet-like, N=2 cells per stack, F=32, batch 32",
             opts("amoebanet", 2, 32, 0, 32, 0), false),
      preset("amoebanet-large",
             "AmoebaNet-like, N=6, F=128, batch 64: parallel cell branches, "
             "exceeds one V100",
             opts("amoebanet", 6, 64, 0, 128, 0), true),
      preset("rnnlm-small", "2-layer LSTM LM (1024), 20 steps, batch 32",
             opts("rnnlm", 2, 32, 20, 1024, 0), false),
      preset("rnnlm-large",
             "4-layer LSTM LM (4096), 96 steps, batch 256: exceeds one V100",
             opts("rnnlm", 4, 256, 96, 4096, 0), true),
      preset("gnmt2-small", "GNMT 2+2 layers (1024), 16 steps, batch 32",
             opts("gnmt", 2, 32, 16, 1024, 0), false),
      preset("gnmt4-medium", "GNMT 4+4 layers (1024), 32 steps, batch 64",
             opts("gnmt", 4, 64, 32, 1024, 0), false),
      preset("gnmt8-large",
             "GNMT 8+8 layers (1024), 100 steps, batch 256: exceeds one V100",
             opts("gnmt", 8, 256, 100, 1024, 0), true),
      preset("gnmt8-80k",
             "GNMT 8+8 layers (1024), 128 steps, batch 192: 80,000+ nodes, "
             "the size of GO's largest graphs; exceeds one V100",
             opts("gnmt", 8, 192, 128, 1024, 0), true),
      preset("transformer_xl-small",
             "Transformer-XL, 4 layers, d 256, segment 64, batch 16",
             opts("transformer_xl", 4, 16, 64, 256, 0), false),
      preset("transformer_xl-large",
             "Transformer-XL large: 18 layers, d 1024, segment and memory 384, "
             "batch 24: exceeds one V100",
             opts("transformer_xl", 18, 24, 384, 1024, 0), true),
      preset("bert-small", "BERT, 4 layers, d 256, seq 128, batch 32",
             opts("bert", 4, 32, 128, 256, 0), false),
      preset("bert-large",
             "BERT-large: 24 layers, d 1024, seq 512, batch 32: exceeds one "
             "V100",
             opts("bert", 24, 32, 512, 1024, 0), true),
      preset("wavenet-small",
             "WaveNet, 20 layers, 8192 samples, batch 2: fits one V100",
             opts("wavenet", 20, 2, 8192, 64, 0), false),
      preset("wavenet-large",
             "WaveNet, 40 layers, 65536 samples, batch 8: exceeds one V100",
             opts("wavenet", 40, 8, 65536, 64, 0), true),
  };
}

absl::StatusOr<GeneratorPreset> FindGeneratorPreset(absl::string_view name) {
  std::vector<GeneratorPreset> presets = GeneratorPresets();
  std::vector<std::string> names;
  for (GeneratorPreset& preset : presets) {
    if (preset.name == name) return std::move(preset);
    names.push_back(preset.name);
  }
  return absl::NotFoundError(
      absl::StrCat("unknown generator preset '", name,
                   "'; presets: ", absl::StrJoin(names, ", ")));
}

}  // namespace gopt::simulator::generators
