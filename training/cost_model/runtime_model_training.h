#ifndef GOPT_TRAINING_COST_MODEL_RUNTIME_MODEL_TRAINING_H_
#define GOPT_TRAINING_COST_MODEL_RUNTIME_MODEL_TRAINING_H_

// Training and judging the learned runtime model
// (simulator/learned_cost_model.h) from measurements
// (worker/runtime_dataset.h): `gopt calibrate --learn` and `gopt-train
// costmodel --task=runtime`.

#include <cstdint>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simulator/learned_cost_model.h"
#include "simulator/topology.h"
#include "worker/runtime_dataset.h"

namespace gopt::policy::cost_model {

// How the model is trained. Defaults are `gopt calibrate --learn`'s.
struct RuntimeTrainingOptions {
  uint64_t seed = 1;  // parameter initialisation
  int hidden = 32;    // units per hidden layer (two hidden layers)
  int epochs = 600;   // full-batch Adam steps
  double learning_rate = 3e-3;
  double weight_decay = 1e-4;
  // Also learn the cross-device costs from the measured step times (link
  // latency and device time per transfer; see TrainRuntimeModel).
  // Default true.
  bool fit_cross_device_costs = true;
  // Graph ids whose measurements never enter training (judged only).
  std::set<std::string> held_out;
  // Called every 50 epochs with the epoch and the regression loss.
  std::function<void(int, double)> progress;
};

// How well plans of one graph are ranked and priced, learned model beside
// the calibrated roofline, on the same measured plans.
struct GraphFidelity {
  std::string graph;
  bool held_out = false;
  int plans = 0;
  double spearman_learned = 0;
  double spearman_roofline = 0;
  double mape_learned = 0;  // percent
  double mape_roofline = 0;
  // Per measured plan: its name, the measured median and both predictions.
  struct Plan {
    std::string name;
    double measured_s = 0;
    double learned_s = 0;
    double roofline_s = 0;
  };
  std::vector<Plan> per_plan;
};

// A trained model and what it achieves.
struct RuntimeTrainingResult {
  simulator::RuntimeModelParams params;
  int kernel_samples = 0;  // (node, device, plan-shape) medians trained on
  // Root mean square of log(predicted / measured) kernel times, trained
  // graphs: learned and roofline.
  double kernel_log_rmse_learned = 0;
  double kernel_log_rmse_roofline = 0;
  std::vector<GraphFidelity> per_graph;  // every graph of the dataset
  // The topology to serve: the calibrated one with the model on every
  // device and the learned cross-device costs on its links.
  simulator::Topology topology;
  std::string cross_device_note;  // what the link fit chose
};

// Trains on every graph of `dataset` not in options.held_out, with
// `topology` (the calibrated one the measurements were taken on: plan
// device i = topology device i, no runtime model on it) pricing the
// roofline the model corrects. Two steps: kernel times (the MLP, a
// log-time regression on each node's median measured time per device),
// then the cross-device costs the kernels do not explain (a grid over an
// added link latency and an added per-transfer device time, chosen by the
// within-graph Spearman and the log error of the trained graphs' step
// times). Then judges every graph. Deterministic for a seed. Errors:
// InvalidArgument when no measured kernel is left to train on, or a plan names
// a device the topology lacks; Internal for a LibTorch failure.
absl::StatusOr<RuntimeTrainingResult> TrainRuntimeModel(
    const worker::RuntimeDataset& dataset, const simulator::Topology& topology,
    const RuntimeTrainingOptions& options);

// Per graph of `dataset`: Spearman and MAPE of the step times `learned`
// (a topology whose devices carry the model) and `roofline` (the same
// without it) predict for the measured plans, against the measured
// medians. `held_out` marks graphs. Errors: the simulator's for a plan it
// rejects (naming graph and plan).
absl::StatusOr<std::vector<GraphFidelity>> JudgeRuntimeModel(
    const worker::RuntimeDataset& dataset, const simulator::Topology& learned,
    const simulator::Topology& roofline, const std::set<std::string>& held_out);

// Writes the trained model to `path` (simulator::RuntimeModelToJson) with
// its card: the command, the data directory, the seed, the kernel errors,
// the cross-device fit and every graph's figures. PermissionDenied naming
// the path when it cannot be written.
absl::Status WriteRuntimeModel(const RuntimeTrainingResult& trained,
                               const std::string& command,
                               const std::string& data_dir, uint64_t seed,
                               const std::string& path);

// Prints the kernel errors, the cross-device fit and one row per graph
// (held out or trained; Spearman and MAPE, learned and roofline) to `out`;
// with `per_plan`, each graph's plans too (measured and predicted ms).
void PrintRuntimeTraining(const RuntimeTrainingResult& trained,
                          std::ostream& out, bool per_plan = false);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_TRAINING_COST_MODEL_RUNTIME_MODEL_TRAINING_H_
