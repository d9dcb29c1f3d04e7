// Import speed of every importer on the real graphs in ../shared/data and on
// a generated 1,000,000-instruction HLO module, and export speed (a plan
// written back into the same file, graph/exporter.h) of every format with
// an exporter beside its import. Reports bytes/s (MB/s) and nodes/s. Beside
// each import, its two parts that a plan-store hit with import adds up
// with it: the pre-parse memory estimate the engine makes before importing
// (Estimate/, ImporterRegistry::EstimateCost) and the graph fingerprint
// that keys the store (Fingerprint/, GraphFingerprint).
//
//   build/bin/gopt_import_benchmark [--benchmark_filter=Nux]
//   GOPT_SHARED_DATA=/path/to/shared/data build/bin/gopt_import_benchmark
//
// `--write_synthetic_hlo=PATH` writes the generated 1M-instruction module to
// PATH and exits (to time `gopt inspect PATH` on the same text).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/fingerprint.h"
#include "graph/import/builtin_exporters.h"
#include "graph/import/builtin_importers.h"

namespace gopt::graph {
namespace {

std::string SharedDataRoot() {
  const char* env = std::getenv("GOPT_SHARED_DATA");
  return env != nullptr && *env != '\0' ? env : GOPT_SHARED_DATA_DEFAULT_PATH;
}

const ImporterRegistry& Registry() {
  static const ImporterRegistry* const registry = [] {
    auto* r = new ImporterRegistry();
    RegisterBuiltinImporters(r);
    return r;
  }();
  return *registry;
}

// A deterministic HLO module in the current text syntax with `instructions`
// entry instructions: a mix of dots, elementwise ops, broadcasts and
// reductions over f32[128,128] values, each with op metadata, each reading
// recent values so the graph is wide as well as deep.
std::string GenerateHloText(int instructions) {
  std::mt19937 rng(/*seed=*/7);
  std::string text =
      "HloModule synthetic, entry_computation_layout={(f32[128,128]{1,0}, "
      "f32[128,128]{1,0})->f32[128,128]{1,0}}\n\n"
      "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
      "ENTRY %main (p0: f32[128,128], p1: f32[128,128]) -> f32[128,128] {\n"
      "  %v0 = f32[128,128]{1,0} parameter(0)\n"
      "  %v1 = f32[128,128]{1,0} parameter(1)\n"
      "  %zero = f32[] constant(0)\n";
  text.reserve(static_cast<size_t>(instructions) * 140);
  int last = 1;
  for (int i = 2; i < instructions - 1; ++i) {
    const int a = last - static_cast<int>(rng() % std::min(last + 1, 16));
    const int b = last - static_cast<int>(rng() % std::min(last + 1, 16));
    const std::string metadata =
        absl::StrCat(", metadata={op_name=\"jit(step)/layer", i % 97,
                     "\" source_file=\"model.py\" source_line=", i % 1000, "}");
    const std::string name = absl::StrCat("%v", i);
    switch (rng() % 8) {
      case 0:
        absl::StrAppend(&text, "  ", name, " = f32[128,128]{1,0} dot(%v", a,
                        ", %v", b,
                        "), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                        metadata, "\n");
        break;
      case 1: {
        // A row reduction broadcast back: two instructions, one value.
        const std::string reduced = absl::StrCat("%r", i);
        absl::StrAppend(&text, "  ", reduced, " = f32[128]{0} reduce(%v", a,
                        ", %zero), dimensions={1}, to_apply=%add_f32", metadata,
                        "\n");
        absl::StrAppend(&text, "  ", name, " = f32[128,128]{1,0} broadcast(",
                        reduced, "), dimensions={0}", metadata, "\n");
        break;
      }
      case 2:
        absl::StrAppend(&text, "  ", name, " = f32[128,128]{1,0} tanh(%v", a,
                        ")", metadata, "\n");
        break;
      case 3:
        absl::StrAppend(&text, "  ", name, " = f32[128,128]{1,0} multiply(%v",
                        a, ", %v", b, ")", metadata, "\n");
        break;
      default:
        absl::StrAppend(&text, "  ", name, " = f32[128,128]{1,0} add(%v", a,
                        ", %v", b, ")", metadata, "\n");
        break;
    }
    last = i;
  }
  absl::StrAppend(&text, "  ROOT %out = f32[128,128]{1,0} copy(%v", last,
                  ")\n}\n");
  return text;
}

// Import options for a file of ../shared/data: the symbolic dimensions
// the two dynamic ONNX models need (their defaults of 1 make windows that do
// not fit): Silero's audio length, PP-OCR's 48x192 text-line image.
ImportOptions SharedDataImportOptions(const std::string& source) {
  ImportOptions options;
  options.source_name = source;
  options.symbolic_dims["sequence"] = 512;
  options.symbolic_dims["p2o.DynamicDimension.1"] = 48;
  options.symbolic_dims["p2o.DynamicDimension.2"] = 192;
  return options;
}

void RunImport(benchmark::State& state, const std::string& contents,
               const std::string& format, const std::string& source) {
  const ImportOptions options = SharedDataImportOptions(source);
  int64_t nodes = 0;
  for (auto _ : state) {
    absl::StatusOr<Graph> graph = Registry().Import(contents, format, options);
    if (!graph.ok()) {
      state.SkipWithError(std::string(graph.status().message()).c_str());
      return;
    }
    nodes = graph->num_nodes();
    benchmark::DoNotOptimize(graph->total_flops());
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(contents.size()));
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes_per_s"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["file_MB"] = static_cast<double>(contents.size()) / 1e6;
}

// The memory estimate the engine makes of `contents` before it imports
// (engine::ImportGraph): a scan of the bytes.
void RunEstimate(benchmark::State& state, const std::string& contents,
                 const std::string& format, const std::string& source) {
  const ImportOptions options = SharedDataImportOptions(source);
  for (auto _ : state) {
    absl::StatusOr<ParseCost> cost =
        Registry().EstimateCost(contents, format, options);
    if (!cost.ok()) {
      state.SkipWithError(std::string(cost.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(cost->bytes);
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(contents.size()));
}

// The plan store's graph key of the imported graph.
void RunFingerprint(benchmark::State& state, const std::string& contents,
                    const std::string& format, const std::string& source) {
  absl::StatusOr<Graph> graph =
      Registry().Import(contents, format, SharedDataImportOptions(source));
  if (!graph.ok()) {
    state.SkipWithError(std::string(graph.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    std::string fingerprint = GraphFingerprint(*graph);
    benchmark::DoNotOptimize(fingerprint.data());
  }
  state.counters["nodes"] = static_cast<double>(graph->num_nodes());
}

// Writes a plan (devices round-robin over 4, priorities 0..15) into
// `contents` once per iteration: the cost of `gopt optimize --write`
// beyond the optimization itself.
void RunExport(benchmark::State& state, const std::string& contents,
               const std::string& format, const std::string& source) {
  static const ExporterRegistry* const exporters = [] {
    auto* registry = new ExporterRegistry();
    RegisterBuiltinExporters(registry);
    return registry;
  }();
  const ImportOptions options = SharedDataImportOptions(source);
  absl::StatusOr<Graph> graph = Registry().Import(contents, format, options);
  absl::StatusOr<const Exporter*> exporter = exporters->Find(format);
  if (!graph.ok() || !exporter.ok()) {
    state.SkipWithError("import failed or no exporter");
    return;
  }
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.add_device(id % 4);
    plan.add_priority(id % 16);
  }
  ExportOptions export_options;
  for (int d = 0; d < 4; ++d) {
    export_options.devices.push_back({absl::StrCat("gpu:", d), "gpu"});
  }
  for (auto _ : state) {
    absl::StatusOr<ExportResult> exported =
        (*exporter)->Export(contents, *graph, plan, export_options);
    if (!exported.ok()) {
      state.SkipWithError(std::string(exported.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(exported->contents.data());
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(contents.size()));
  state.counters["nodes"] = static_cast<double>(graph->num_nodes());
  state.counters["file_MB"] = static_cast<double>(contents.size()) / 1e6;
}

void RegisterBenchmarks() {
  static const struct {
    const char* label;
    const char* path;
    const char* format;
  } kFiles[] = {
      {"Nux_hlo", "hlo/nux_flow_jit_loss9581.hlo", "hlo"},
      {"Llama2_hlo_old_syntax", "hlo/llama2_ptxla_neuron_train_tp1.hlo", "hlo"},
      {"Mixer_hlo", "hlo/mixer_b16_jax_unopt.hlo", "hlo"},
      {"UNet_tpugraphs", "tpugraphs/module_tuning_data_layout.pb", "tpugraphs"},
      {"ResNet50_onnx", "onnx/light_resnet50.onnx", "onnx"},
      {"SileroVad_onnx", "onnx/silero_vad_legacy.onnx", "onnx"},
      {"KwsLstm_graphdef", "tf_graphdef/kws_LSTM_S.pb", "graphdef"},
      {"Handtrack_tfjs", "tfjs/handtrack.json", "tfjs"},
      {"PpOcrCls_onnx", "onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx", "onnx"},
  };
  for (const auto& file : kFiles) {
    const std::string path = absl::StrCat(SharedDataRoot(), "/", file.path);
    absl::StatusOr<std::string> contents = ReadFileToString(path);
    if (!contents.ok()) {
      std::cerr << "skipping " << file.label << ": " << contents.status()
                << " (set GOPT_SHARED_DATA)\n";
      continue;
    }
    using Runner = void (*)(benchmark::State&, const std::string&,
                            const std::string&, const std::string&);
    std::vector<std::pair<const char*, Runner>> stages = {
        {"Import/", RunImport},
        {"Estimate/", RunEstimate},
        {"Fingerprint/", RunFingerprint}};
    const std::string format = file.format;
    if (format == "onnx" || format == "graphdef" || format == "tfjs" ||
        format == "hlo") {
      stages.push_back({"Export/", RunExport});
    }
    for (const auto& [stage, run] : stages) {
      benchmark::RegisterBenchmark(
          absl::StrCat(stage, file.label).c_str(),
          [contents = *contents, format, path, run = run](
              benchmark::State& state) { run(state, contents, format, path); })
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark(
      "Import/Synthetic_hlo_1M_instructions",
      [](benchmark::State& state) {
        static const std::string* const text =
            new std::string(GenerateHloText(1'000'000));
        RunImport(state, *text, "hlo", "synthetic-1M.hlo");
      })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
}

}  // namespace
}  // namespace gopt::graph

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  constexpr absl::string_view kWriteFlag = "--write_synthetic_hlo=";
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, kWriteFlag)) continue;
    const std::string path(arg.substr(kWriteFlag.size()));
    std::ofstream out(path, std::ios::binary);
    out << gopt::graph::GenerateHloText(1'000'000);
    if (!out.good()) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
    return 0;
  }
  gopt::graph::RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
