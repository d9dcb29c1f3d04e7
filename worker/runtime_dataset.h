#ifndef GOPT_WORKER_RUNTIME_DATASET_H_
#define GOPT_WORKER_RUNTIME_DATASET_H_

// Measurements as data: plans of many graphs run on this host's executors,
// with every node's measured kernel time, written to a directory that
// training reads back (`gopt calibrate --learn`, `gopt-train costmodel
// --task=runtime`).
//
// The directory (format version 1, documented in docs/runtime-model.md):
//   DIR/graphs/<graph id>.pb   each graph as a binary gopt.v1.Graph (lossless:
//                              graph::GraphToProto), so the data needs no
//                              importer or source file to be read back;
//   DIR/measurements.jsonl     one JSON object per measured plan:
//     {"version":1, "graph":ID, "source":WHERE-FROM, "plan_name":NAME,
//      "device":[...], "priority":[...], "fusion_group":[...],
//      "measured_step_s":MEDIAN, "measured_min_step_s":FASTEST,
//      "spread":(P90-P10)/MEDIAN, "runs":N, "executors":DEVICES,
//      "node_s":[per node: median seconds of its op; 0 for nodes that did
//                not run as an op]}
// Appending one line per plan makes collection resumable: a plan already
// in the file is not measured again.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/plan.h"
#include "simulator/topology.h"
#include "worker/executor.h"

namespace gopt::worker {

inline constexpr int kRuntimeDatasetVersion = 1;

// One measured plan of one graph (a line of measurements.jsonl).
struct MeasuredPlan {
  std::string graph_id;
  std::string source;  // the file or generator the graph came from
  std::string plan_name;
  simulator::Plan plan;
  double measured_step_s = 0;      // median of the kept runs
  double measured_min_step_s = 0;  // fastest run
  double spread = 0;
  int runs = 0;
  int executors = 0;                 // devices the executor had
  std::vector<double> node_seconds;  // per node
};

// A graph to measure: its id (a file-name-safe name, unique in the
// dataset), where it came from, and the graph (borrowed).
struct GraphToMeasure {
  std::string id;
  std::string source;
  const graph::Graph* graph = nullptr;
};

// The id a graph file gets in a dataset: its file name with characters
// outside [A-Za-z0-9._-] replaced by '_' ("graph" for a name that stays
// invalid, such as ".."). Pure.
std::string GraphIdForFile(const std::string& path);

// How CollectRuntimeData measures. Defaults are `gopt calibrate --learn`'s.
struct CollectOptions {
  std::string dir;          // the dataset directory (created when missing)
  uint64_t seed = 1;        // DiversePlans' seed
  int plans_per_graph = 0;  // 0 = every DiversePlans plan (20)
  // Each plan is measured once per round (all plans of a graph, then again)
  // and the round with the lowest median kept: a burst of other load or a
  // slow first run then spoils one round, not the plan. Default 2.
  int rounds = 2;
  // Per plan: warm-up, repeats and time (per-node times are always on).
  ExecuteOptions execute = [] {
    ExecuteOptions o;
    o.warmup_runs = 1;
    o.min_repeats = 5;
    o.max_repeats = 30;
    o.min_measure_seconds = 0.1;
    o.timeout_seconds = 120;
    return o;
  }();
  // Called after each plan of each round (measured, skipped as already
  // present, or failed): measurements done so far, in all (plans x
  // rounds), and a line saying what.
  std::function<void(int done, int total, const std::string& what)> progress;
};

// What a collection did.
struct CollectReport {
  int plans_measured = 0;
  int plans_already_present = 0;  // in measurements.jsonl before the call
  // Plans that could not be measured (executor errors such as a deadline),
  // one line each naming graph, plan and error; they are not written, so
  // a later call tries them again.
  std::vector<std::string> failures;
};

// Measures DiversePlans of every graph on `executor` (plan device i =
// executor device i; `topology` is the executor's, e.g. the calibrated
// one) in options.rounds rounds and appends each plan's line to
// DIR/measurements.jsonl once its graph's rounds are done, after writing the
// graph to DIR/graphs/<id>.pb. Resumable: plans of a graph id already in the
// file are skipped. Errors:
// InvalidArgument for an empty or duplicate id, an id with characters
// other than [A-Za-z0-9._-], or an existing graph file whose graph differs
// from the one given under that id; PermissionDenied naming the path that
// cannot be written; DiversePlans' errors. A plan that fails to run is a
// failure in the report, not an error. Not thread-safe with other users of
// `executor`.
absl::StatusOr<CollectReport> CollectRuntimeData(
    Executor& executor, const simulator::Topology& topology,
    const std::vector<GraphToMeasure>& graphs, const CollectOptions& options);

// A dataset read back: the graphs by id and every measured plan.
struct RuntimeDataset {
  std::map<std::string, graph::Graph> graphs;
  std::vector<MeasuredPlan> plans;
};

// Reads DIR (see the top of this file). Errors: NotFound when DIR has no
// measurements.jsonl; InvalidArgument naming the file and line for a line
// that does not parse, has another version, names a graph without its
// file, or whose vectors do not have the graph's node count; the graph
// files' import errors (naming the file).
absl::StatusOr<RuntimeDataset> ReadRuntimeDataset(const std::string& dir);

}  // namespace gopt::worker

#endif  // GOPT_WORKER_RUNTIME_DATASET_H_
