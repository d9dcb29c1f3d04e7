// gopt-import-memory: what importing each file really costs beside what the
// server charges for it before parsing (Importer::EstimateCost). Each file
// is imported in a child process of its own, so its peak RSS (VmHWM) is its
// own; the table row gives the file's size, the node elements counted on
// the wire, the estimated parse bytes, the peak RSS growth of scan + parse +
// import, and their ratio (estimate / measured: above 1 means the server
// charges more than the import takes). Not a test: a measurement tool for
// docs/reliability.md ("Import admission").
//
//   gopt-import-memory ../shared/data/hlo/*.hlo ../shared/data/onnx/*.onnx

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"

namespace {

// VmRSS or VmHWM of this process in bytes.
int64_t StatusBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) {
      return std::stoll(line.substr(std::string(field).size())) * 1024;
    }
  }
  return -1;
}

// Imports `path` and prints its row; runs in a child process.
int Measure(const std::string& path) {
  gopt::graph::ImporterRegistry registry;
  gopt::graph::RegisterBuiltinImporters(&registry);
  absl::StatusOr<std::string> contents = gopt::graph::ReadFileToString(path);
  if (!contents.ok()) {
    std::cerr << contents.status() << "\n";
    return 1;
  }
  gopt::graph::ImportOptions options;
  options.source_name = path;
  const int64_t before = StatusBytes("VmRSS:");
  absl::StatusOr<gopt::graph::ParseCost> cost =
      registry.EstimateCost(*contents, "auto", options);
  absl::StatusOr<gopt::graph::Graph> graph =
      registry.Import(*contents, "auto", options);
  const int64_t peak = StatusBytes("VmHWM:");
  if (!cost.ok() || !graph.ok()) {
    std::cout << absl::StrFormat(
        "| %s | error: %s |\n", path,
        (cost.ok() ? graph.status() : cost.status()).ToString());
    return 0;
  }
  const double measured = static_cast<double>(peak - before);
  std::cout << absl::StrFormat(
      "| %s | %s | %.1f MiB | %d | %d | %.1f MiB | %.1f MiB | %.2f |\n", path,
      graph->format(), contents->size() / 1048576.0, cost->nodes,
      graph->num_nodes(), cost->bytes / 1048576.0, measured / 1048576.0,
      measured > 0 ? cost->bytes / measured : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: gopt-import-memory FILE...\n";
    return 64;
  }
  std::cout << "| file | format | size | node elements (wire) | IR nodes | "
               "charged for the parse | peak RSS growth | charged / used "
               "|\n|---|---|---|---|---|---|---|---|\n";
  std::cout.flush();
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      const int status = Measure(argv[i]);
      std::cout.flush();
      _exit(status);
    }
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}
