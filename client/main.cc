// gopt: command-line front end. Each subcommand is a thin wrapper over a
// library call; flags are read here once and turned into options.

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/inspect.h"
#include "graph/import/builtin_importers.h"
#include "graph/native/native_importer.h"

ABSL_FLAG(std::string, format, "auto",
          "input format: auto, hlo, hlo-proto, onnx, graphdef, tfjs, gopt, "
          "tpugraphs");
ABSL_FLAG(bool, json, false, "print one JSON object instead of a table");
ABSL_FLAG(std::vector<std::string>, dim, {},
          "symbolic dimension values, e.g. --dim=batch=8,seq=128");
ABSL_FLAG(int64_t, default_dim, 1,
          "value for symbolic/unknown dimensions not given by --dim");
ABSL_FLAG(int64_t, max_nodes, 5'000'000, "reject graphs with more nodes");
ABSL_FLAG(std::string, out, "",
          "convert: output path (.json writes JSON, anything else binary)");

namespace {

constexpr int kExitUsage = 64;
constexpr int kExitImportError = 2;

constexpr char kUsage[] =
    R"(gopt: optimize ML computation graphs for ML compilers.

usage: gopt COMMAND [FLAGS] FILE

commands:
  inspect FILE    import a graph and print name, format, node/edge counts,
                  total FLOPs and bytes, op-kind histogram and warnings
                  (--json for one JSON object)
  convert FILE    import a graph and write it in gopt's own format
                  (--out graph.json | graph.pb)

FILE formats (sniffed, or set with --format): XLA HLO text (hlo), XLA
HloModuleProto (hlo-proto), ONNX (onnx), TensorFlow GraphDef binary/text
(graphdef), TF.js model.json (tfjs), gopt.v1.Graph binary/JSON (gopt),
TpuGraphs tuning protobufs (tpugraphs).

exit codes: 0 ok, 2 the file could not be imported, 64 bad usage.

examples:
  gopt inspect ../shared/data/hlo/mixer_b16_jax_unopt.hlo
  gopt inspect model.onnx --dim=batch=32 --json
  gopt convert model.pb --format=graphdef --out model.gopt.json)";

absl::StatusOr<gopt::graph::ImportOptions> ImportOptionsFromFlags() {
  gopt::graph::ImportOptions options;
  options.default_symbolic_dim = absl::GetFlag(FLAGS_default_dim);
  options.limits.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  if (options.default_symbolic_dim < 0) {
    return absl::InvalidArgumentError("--default_dim must be >= 0");
  }
  for (const std::string& entry : absl::GetFlag(FLAGS_dim)) {
    std::vector<std::string> parts = absl::StrSplit(entry, '=');
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim entry '", entry, "' is not NAME=VALUE with VALUE >= 0"));
    }
    options.symbolic_dims[parts[0]] = value;
  }
  return options;
}

absl::StatusOr<gopt::graph::Graph> ImportFromFlags(const std::string& path) {
  // Validated in main() before any command runs.
  const gopt::graph::ImportOptions options = *ImportOptionsFromFlags();
  gopt::graph::ImporterRegistry registry;
  gopt::graph::RegisterBuiltinImporters(&registry);
  return registry.ImportFile(path, absl::GetFlag(FLAGS_format), options);
}

int RunInspect(const std::string& path) {
  absl::StatusOr<gopt::graph::Graph> graph = ImportFromFlags(path);
  if (!graph.ok()) {
    std::cerr << "gopt inspect: " << graph.status().message() << "\n";
    return kExitImportError;
  }
  const gopt::client::InspectReport report = gopt::client::Inspect(*graph);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::InspectReportToJson(report).dump(2) << "\n";
  } else {
    std::cout << gopt::client::InspectReportToText(report);
  }
  return 0;
}

int RunConvert(const std::string& path) {
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::cerr << "gopt convert: --out is required\n";
    return kExitUsage;
  }
  absl::StatusOr<gopt::graph::Graph> graph = ImportFromFlags(path);
  if (!graph.ok()) {
    std::cerr << "gopt convert: " << graph.status().message() << "\n";
    return kExitImportError;
  }
  const bool json = out.size() >= 5 && out.substr(out.size() - 5) == ".json";
  absl::StatusOr<std::string> bytes = gopt::graph::SerializeGraph(*graph, json);
  if (!bytes.ok()) {
    std::cerr << "gopt convert: " << bytes.status().message() << "\n";
    return 1;
  }
  std::FILE* file = std::fopen(out.c_str(), "wb");
  if (file == nullptr ||
      std::fwrite(bytes->data(), 1, bytes->size(), file) != bytes->size() ||
      std::fclose(file) != 0) {
    std::cerr << "gopt convert: cannot write " << out << "\n";
    return 1;
  }
  std::cerr << "wrote " << out << " (" << graph->num_nodes() << " nodes)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::cerr << kUsage << "\n";
    return kExitUsage;
  }
  const std::string command = args[1];
  if (command == "help") {
    std::cout << kUsage << "\n";
    return 0;
  }
  if (command != "inspect" && command != "convert") {
    std::cerr << "gopt: unknown command '" << command << "'\n\n"
              << kUsage << "\n";
    return kExitUsage;
  }
  if (args.size() != 3) {
    std::cerr << "gopt " << command << ": expected exactly one FILE\n";
    return kExitUsage;
  }
  if (absl::Status options = ImportOptionsFromFlags().status(); !options.ok()) {
    std::cerr << "gopt " << command << ": " << options.message() << "\n";
    return kExitUsage;
  }
  return command == "inspect" ? RunInspect(args[2]) : RunConvert(args[2]);
}
