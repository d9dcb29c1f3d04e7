#include "training/commands/common.h"

#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "training/go/corpus.h"
#include "util/status_macros.h"

namespace gopt::policy {

std::string GitRevision() {
  std::string revision;
  if (FILE* pipe = popen("git rev-parse --short HEAD 2>/dev/null", "r")) {
    char buffer[64];
    while (fgets(buffer, sizeof(buffer), pipe) != nullptr) revision += buffer;
    pclose(pipe);
  }
  while (!revision.empty() && std::isspace(revision.back())) {
    revision.pop_back();
  }
  return revision.empty() ? "unknown" : revision;
}

std::string UtcNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                          absl::UTCTimeZone());
}

absl::StatusOr<std::unique_ptr<go::GoModel>> LoadPolicyModel(
    const std::string& dir) {
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(dir));
  ASSIGN_OR_RETURN(std::string checkpoint, VerifiedCheckpointPath(dir, card));
  return go::GoModel::Load(checkpoint);
}

absl::StatusOr<std::vector<go::CorpusGraph>> LoadCorpus(
    const std::string& data_dir, int max_nodes) {
  go::CorpusOptions corpus_options;
  corpus_options.data_dir = data_dir;
  corpus_options.max_nodes = max_nodes;
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<go::CorpusGraph>> corpus =
      go::BuildPretrainingCorpus(corpus_options, &skipped);
  for (const std::string& why : skipped) std::cerr << "skipped " << why << "\n";
  return corpus;
}

absl::StatusOr<go::PpoOptions> PpoOptionsOf(const GoTrainingOptions& options) {
  go::PpoOptions ppo;
  ppo.tasks = TaskSet{false, false, false, false};
  for (const std::string& task : options.tasks) {
    if (task == "placement") {
      ppo.tasks.placement = true;
    } else if (task == "scheduling") {
      ppo.tasks.scheduling = true;
    } else if (task == "fusion") {
      ppo.tasks.fusion = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown task '", task, "'; known: placement, scheduling, fusion"));
    }
  }
  ppo.samples_per_graph = options.samples;
  ppo.epochs = options.epochs;
  ppo.learning_rate = options.learning_rate;
  ppo.entropy_coef = options.entropy_coef;
  ppo.simulation_threads = options.simulation_threads;
  ppo.seed = options.seed;
  return ppo;
}

}  // namespace gopt::policy
