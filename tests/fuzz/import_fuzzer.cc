// libFuzzer entry point for one importer. The format comes from the
// compile definition GOPT_FUZZ_FORMAT ("hlo", "onnx", ...), so each format
// gets its own fuzzer binary from this one file. Any input must give either
// a Graph or an error Status: a crash, hang or sanitizer report is a bug.

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "graph/import/builtin_importers.h"

#ifndef GOPT_FUZZ_FORMAT
#error "define GOPT_FUZZ_FORMAT"
#endif

namespace {

const gopt::graph::Importer& FuzzedImporter() {
  static const gopt::graph::ImporterRegistry* const registry = [] {
    // Mutated protobufs make libprotobuf log on every input; the importer's
    // Status is what is under test.
    google::protobuf::SetLogHandler(nullptr);
    auto* r = new gopt::graph::ImporterRegistry();
    gopt::graph::RegisterBuiltinImporters(r);
    return r;
  }();
  static const gopt::graph::Importer* const importer = [] {
    auto found = registry->Find(GOPT_FUZZ_FORMAT);
    if (!found.ok()) {
      std::cerr << found.status() << "\n";
      std::abort();
    }
    return *found;
  }();
  return *importer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gopt::graph::ImportOptions options;
  // Keep single inputs cheap so the fuzzer explores instead of grinding.
  options.limits.max_nodes = 100'000;
  const absl::string_view contents(reinterpret_cast<const char*>(data), size);
  const gopt::graph::Importer& importer = FuzzedImporter();
  importer.Sniff(contents);
  auto graph = importer.Import(contents, options);
  if (graph.ok()) {
    // Touch the result so lazily wrong structures are caught too.
    volatile double flops = graph->total_flops();
    for (gopt::graph::NodeId id = 0; id < graph->num_nodes(); ++id) {
      flops = flops + static_cast<double>(graph->in_edges(id).size());
    }
  }
  return 0;
}
