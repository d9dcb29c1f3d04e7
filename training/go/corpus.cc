#include "training/go/corpus.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"
#include "simulator/generators/generators.h"

namespace gopt::policy::go {
namespace {

using simulator::generators::GeneratorOptions;

// Sizes beyond the presets, so that each family is seen at several scales.
std::vector<GeneratorOptions> ExtraGeneratorOptions() {
  std::vector<GeneratorOptions> extra;
  auto add = [&](std::string family, int layers, int batch, int seq, int hidden,
                 int image_size) {
    GeneratorOptions o;
    o.family = std::move(family);
    o.layers = layers;
    o.batch = batch;
    o.seq = seq;
    o.hidden = hidden;
    o.image_size = image_size;
    extra.push_back(o);
  };
  add("inception_v3", 0, 64, 0, 0, 0);
  add("resnet50", 101, 64, 0, 0, 0);
  add("amoebanet", 3, 32, 0, 64, 0);
  add("rnnlm", 2, 128, 32, 2048, 0);
  add("gnmt", 2, 128, 24, 1024, 0);
  add("bert", 6, 32, 256, 512, 0);
  add("wavenet", 30, 4, 16384, 64, 0);
  return extra;
}

}  // namespace

absl::StatusOr<graph::Graph> LoadGraphSource(const std::string& source) {
  if (source.rfind("gen:", 0) == 0) {
    absl::StatusOr<simulator::generators::GeneratorPreset> preset =
        simulator::generators::FindGeneratorPreset(source.substr(4));
    if (!preset.ok()) return preset.status();
    return simulator::generators::GenerateModelGraph(preset->options);
  }
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  graph::ImportOptions options;
  options.source_name = source;
  return registry.ImportFile(source, "auto", options);
}

const std::vector<std::string>& HeldOutRealGraphs() {
  static const auto* held_out = new std::vector<std::string>{
      "hlo/mixer_b16_jax_unopt.hlo", "hlo/llama2_ptxla_neuron_train_tp1.hlo",
      "onnx/light_shufflenet.onnx",  "hlo/efficientnet_jax_lambda256.hlo",
      "tfjs/movenet-multipose.json",
  };
  return *held_out;
}

absl::StatusOr<std::vector<CorpusGraph>> BuildPretrainingCorpus(
    const CorpusOptions& options, std::vector<std::string>* skipped) {
  std::vector<CorpusGraph> corpus;
  auto add = [&](std::string label, graph::Graph graph) {
    if (graph.num_nodes() > options.max_nodes) {
      skipped->push_back(absl::StrCat(label, ": ", graph.num_nodes(),
                                      " nodes > max ", options.max_nodes));
      return;
    }
    corpus.push_back(
        {std::move(label), std::make_shared<graph::Graph>(std::move(graph))});
  };
  for (const auto& preset : simulator::generators::GeneratorPresets()) {
    if (preset.options.family == kHeldOutFamily) continue;
    absl::StatusOr<graph::Graph> graph =
        simulator::generators::GenerateModelGraph(preset.options);
    if (graph.status().code() == absl::StatusCode::kResourceExhausted) {
      skipped->push_back(
          absl::StrCat("gen:", preset.name, ": ", graph.status().message()));
      continue;
    }
    if (!graph.ok()) return graph.status();
    add(absl::StrCat("gen:", preset.name), *std::move(graph));
  }
  for (const GeneratorOptions& options : ExtraGeneratorOptions()) {
    absl::StatusOr<graph::Graph> graph =
        simulator::generators::GenerateModelGraph(options);
    if (!graph.ok()) return graph.status();
    std::string label = absl::StrCat("gen:", graph->name());
    add(std::move(label), *std::move(graph));
  }
  if (options.data_dir.empty()) return corpus;
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  for (const char* folder : {"hlo", "onnx", "tf_graphdef", "tfjs"}) {
    const std::filesystem::path dir =
        std::filesystem::path(options.data_dir) / folder;
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      const std::string label =
          absl::StrCat(folder, "/", file.filename().string());
      const auto& held_out = HeldOutRealGraphs();
      if (std::find(held_out.begin(), held_out.end(), label) !=
          held_out.end()) {
        continue;
      }
      graph::ImportOptions import_options;
      import_options.source_name = file.string();
      absl::StatusOr<graph::Graph> graph =
          registry.ImportFile(file.string(), "auto", import_options);
      if (!graph.ok()) {
        skipped->push_back(absl::StrCat(label, ": ", graph.status().message()));
        continue;
      }
      add(label, *std::move(graph));
    }
  }
  return corpus;
}

}  // namespace gopt::policy::go
