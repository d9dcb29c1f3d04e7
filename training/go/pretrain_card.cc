#include "training/go/pretrain_card.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "policy/card.h"
#include "training/go/corpus.h"
#include "util/geometric_mean.h"

namespace gopt::policy::go {

nlohmann::json PretrainCard(const PretrainCardInfo& info) {
  const PpoOptions& ppo = info.pretrain.ppo;
  const GoModelOptions& model = info.model;
  return {{"format_version", kPolicyCardFormatVersion},
          {"kind", "go"},
          {"name", "go-multitask"},
          {"version", "2"},
          {"tasks", info.tasks},
          {"checkpoint", info.checkpoint},
          {"training",
           {{"command", info.command_line},
            {"data",
             {{"graphs", info.graphs},
              {"topologies", info.topologies},
              {"held_out",
               {{"real_graphs", HeldOutRealGraphs()},
                {"generator_family", kHeldOutFamily}}}}},
            {"seed", info.seed},
            {"steps", 0},
            {"wall_seconds", 0},
            {"git_revision", info.git_revision},
            {"started_utc", info.started_utc},
            {"device", absl::StrCat("CPU, ", info.torch_threads,
                                    " LibTorch threads (shared 2-core host)")},
            {"architecture",
             {{"hidden", model.hidden},
              {"sage_layers", model.sage_layers},
              {"message", model.message},
              {"attention_layers_per_task", model.attention_layers},
              {"attention_dim", model.attention_dim},
              {"heads", model.heads},
              {"feed_forward", model.feed_forward},
              {"segment", model.segment},
              {"co_location_head", model.co_location_head},
              {"parameters", info.parameters}}},
            {"ppo",
             {{"samples_per_graph", ppo.samples_per_graph},
              {"epochs", ppo.epochs},
              {"learning_rate", ppo.learning_rate},
              {"clip", ppo.clip},
              {"entropy_coef", ppo.entropy_coef},
              {"max_grad_norm", ppo.max_grad_norm},
              {"graphs_per_step", info.pretrain.graphs_per_step},
              {"pool_size", info.pretrain.pool_size},
              {"switch_every", info.pretrain.switch_every}}}}},
          {"metrics", nlohmann::json::object()}};
}

nlohmann::json TrainingMetrics(const std::vector<TrainLogRow>& log) {
  const size_t window = std::max<size_t>(1, log.size() / 10);
  auto mean = [&](size_t begin, size_t end,
                  const std::function<double(const TrainLogRow&)>& f) {
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += f(log[i]);
    return sum / (end - begin);
  };
  auto reward = [](const TrainLogRow& r) { return r.reward; };
  auto geomean_ratio = [&](size_t begin, size_t end) {
    GeometricMean ratio;
    for (size_t i = begin; i < end; ++i) ratio.Add(log[i].best_step_ratio);
    return ratio.value();
  };
  return {{"window_steps", window},
          {"mean_reward_first", mean(0, window, reward)},
          {"mean_reward_last", mean(log.size() - window, log.size(), reward)},
          {"geomean_best_step_ratio_first", geomean_ratio(0, window)},
          {"geomean_best_step_ratio_last",
           geomean_ratio(log.size() - window, log.size())}};
}

}  // namespace gopt::policy::go
