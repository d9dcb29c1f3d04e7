// gopt-train costmodel-runtime: see training/train_commands.h.

#include <filesystem>
#include <ostream>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "simulator/topology_proto.h"
#include "training/cost_model/runtime_model_training.h"
#include "training/train_commands.h"
#include "util/status_macros.h"
#include "worker/calibration.h"
#include "worker/runtime_dataset.h"

namespace gopt::policy {

absl::Status RunRuntimeModelTrainCommand(
    const RuntimeModelTrainCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::LoadTopology(options.topology));
  ASSIGN_OR_RETURN(worker::RuntimeDataset dataset,
                   worker::ReadRuntimeDataset(options.data));
  cost_model::RuntimeTrainingOptions training;
  training.seed = options.seed;
  training.epochs = options.epochs;
  training.hidden = options.hidden;
  training.held_out =
      std::set<std::string>(options.held_out.begin(), options.held_out.end());
  for (const std::string& id : training.held_out) {
    if (dataset.graphs.count(id) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--held_out: no graph '", id, "' in ", options.data));
    }
  }
  ASSIGN_OR_RETURN(cost_model::RuntimeTrainingResult trained,
                   cost_model::TrainRuntimeModel(dataset, topology, training));
  RETURN_IF_ERROR(cost_model::WriteRuntimeModel(
      trained, options.command_line, options.data, options.seed, options.out));
  cost_model::PrintRuntimeTraining(trained, out, options.per_plan);
  out << "wrote " << options.out << "\n";
  if (!options.topology_out.empty()) {
    namespace fs = std::filesystem;
    simulator::Topology learned = trained.topology;
    const fs::path base = fs::absolute(options.topology_out).parent_path();
    learned.runtime_model_path =
        fs::absolute(options.out).lexically_relative(base).string();
    RETURN_IF_ERROR(worker::WriteTopologyJson(learned, options.topology_out));
    out << "wrote " << options.topology_out << " (references "
        << learned.runtime_model_path << ")\n";
  }
  return absl::OkStatus();
}

}  // namespace gopt::policy
