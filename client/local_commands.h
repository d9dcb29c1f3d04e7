#ifndef GOPT_CLIENT_LOCAL_COMMANDS_H_
#define GOPT_CLIENT_LOCAL_COMMANDS_H_

// The `gopt` commands that run in this process without a server: inspect,
// convert, simulate, bench, generate. Each takes its Options struct (filled
// by ParseCli, client/command_line.h, or by a test) and writes its report to
// `out`; progress lines go to std::cerr. Errors are the Status of the step
// that failed (which file, node, flag); ExitCodeFor (command_line.h) turns
// them into the process exit code. Each call is independent; thread-safe as
// long as `out` is not shared.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/importer.h"
#include "policy/policy.h"

namespace gopt::client {

// How graph files are read: --format, --dim, --default_dim, --max_nodes.
struct GraphReadOptions {
  // auto (sniffed), hlo, hlo-proto, onnx, graphdef, tfjs, gopt, tpugraphs.
  std::string format = "auto";
  // Symbolic dimension values (--dim=batch=8,seq=128), the value of the
  // others (--default_dim, default 1) and the node limit (--max_nodes,
  // default 5,000,000): graph::ImportOptions' defaults.
  graph::ImportOptions import;
};

// Where the shipped policies are (policy/pretrained of the source tree this
// binary was built from): the default of every --policy_dir.
std::string DefaultPolicyDir();

// Writes `bytes` to the file `path` (replacing it). Internal naming the
// path when it cannot be written.
absl::Status WriteFileBytes(const std::string& path, const std::string& bytes);

// Reads a graph file, or `gen:PRESET` for a generated graph
// (simulator/generators). Errors: the importer's or generator's (NotFound
// for a missing file or preset, InvalidArgument naming the node at fault).
absl::StatusOr<graph::Graph> LoadGraph(const std::string& source,
                                       const GraphReadOptions& options);

// gopt inspect FILE: name, format, counts, FLOPs, bytes, op histogram.
struct InspectOptions {
  std::string path;  // the graph file (the one operand)
  GraphReadOptions read;
  bool json = false;  // one JSON object instead of the table
  // --node: nodes to show in full (op, outputs, cost, op_name, source file
  // and line, sharding), by name, searched in attached bodies too; a name
  // no node has is NotFound.
  std::vector<std::string> nodes;
};
absl::Status RunInspect(const InspectOptions& options, std::ostream& out);

// gopt convert FILE --out=PATH: the graph in gopt's own format.
struct ConvertOptions {
  std::string path;
  GraphReadOptions read;
  std::string out_path;  // required; .json writes JSON, else binary
};
absl::Status RunConvert(const ConvertOptions& options, std::ostream& out);

// gopt simulate FILE: one plan on one topology.
struct SimulateOptions {
  std::string path;
  GraphReadOptions read;
  // A preset (cpu-host, v100x2-pcie, v100x4-nvlink, a100x8-nvlink,
  // h100x8-nvlink, tpuv3x8) or a topology JSON file.
  std::string topology = "v100x4-nvlink";
  // PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]] or best-baseline; ignored when
  // plan_path is set.
  std::string method = "single";
  std::string plan_path;   // a plan JSON file (gopt.v1.Plan); "" = method
  std::string trace_path;  // "" = no Chrome trace
  int repeat = 1;          // simulations; the median time is reported (>= 1)
  uint64_t seed = 0;       // for randomised baselines
  bool json = false;
};
absl::Status RunSimulate(const SimulateOptions& options, std::ostream& out);

// gopt bench FILE...: every method on every graph (client/bench.h).
struct BenchCommandOptions {
  // Graph files or gen:PRESET (operands and --graph); at least one.
  std::vector<std::string> sources;
  GraphReadOptions read;
  std::string topology = "v100x4-nvlink";
  // Methods (BenchOptions::methods); empty = the standard baselines and
  // best-baseline.
  std::vector<std::string> methods;
  uint64_t seed = 0;
  // The go-* methods load the GO policy `go_policy` (a sub-directory with a
  // card.json) of `policy_dir`; empty: the newest GO policy there, the one
  // gopt-server serves (policy::NewestPolicyDirectory).
  std::string policy_dir = DefaultPolicyDir();
  std::string go_policy;
  int fine_tune_steps = 50;  // go-finetune*: PPO steps at most (> 0)
  // go-*: zero-shot decodes besides the greedy (>= 0).
  int go_samples = policy::kDefaultZeroShotSamples;
  int search_simulations = 512;  // plans searched per PPO step (>= 0)
  bool json = false;
};
absl::Status RunBench(const BenchCommandOptions& options, std::ostream& out);

// gopt generate FAMILY --out=PATH (or `generate list`): a model-family
// training-step graph. Zero sizes take the family's (or preset's) default.
struct GenerateOptions {
  std::string family;  // operand; "" with preset set; "list" lists them
  std::string preset;  // a named preset (generate list)
  int layers = 0;
  int batch = 0;
  int seq = 0;  // sequence / unroll length
  int hidden = 0;
  int image_size = 0;
  uint64_t seed = 0;     // 0 = the generator's default seed
  std::string out_path;  // required unless family is "list"
};
absl::Status RunGenerate(const GenerateOptions& options, std::ostream& out);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_LOCAL_COMMANDS_H_
