#include "policy/cost_model/layout_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/cost_model/cost_model.h"
#include "policy/cost_model/features.h"
#include "policy/cost_model/policy_loading.h"
#include "util/status_macros.h"

namespace gopt::policy {
namespace {

using cost_model::CostModel;

constexpr int kMaxSampledCandidates = 24;

class LayoutCostModelPolicy final : public Policy {
 public:
  LayoutCostModelPolicy(PolicyInfo info, std::unique_ptr<CostModel> model)
      : info_(std::move(info)), model_(std::move(model)) {}

  const PolicyInfo& info() const override { return info_; }

  absl::StatusOr<Proposal> Propose(
      const simulator::Simulator& simulator,
      const ProposeOptions& options) const override;

 private:
  PolicyInfo info_;
  std::unique_ptr<CostModel> model_;
};

absl::StatusOr<Proposal> LayoutCostModelPolicy::Propose(
    const simulator::Simulator& simulator,
    const ProposeOptions& options) const {
  if (!options.tasks.layout) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy '", info_.name, "' decides only the layout task"));
  }
  const auto start = std::chrono::steady_clock::now();
  const graph::Graph& graph = simulator.graph();
  simulator::Plan plan = options.base_plan != nullptr
                             ? *options.base_plan
                             : simulator::DefaultPlan(graph);
  if (plan.layout.empty()) plan.layout.assign(graph.num_nodes(), {});
  RETURN_IF_ERROR(simulator::ValidatePlan(plan, graph, simulator.topology()));
  plan.method = info_.name;

  const cost_model::FeaturizedGraph featurized =
      cost_model::FeaturizeGraph(graph);
  Proposal proposal;
  int changed = 0;
  double predicted_gain = 0;
  if (!featurized.configurable_nodes.empty()) {
    ASSIGN_OR_RETURN(std::shared_ptr<const cost_model::PreparedGraph> prepared,
                     model_->Prepare(featurized));
    const std::vector<float> start_features =
        cost_model::LayoutAssignmentFeatures(graph, featurized, plan.layout);
    ASSIGN_OR_RETURN(std::vector<double> start_score,
                     model_->Score(*prepared, start_features, 1));
    double current = start_score[0];
    for (int32_t node : featurized.configurable_nodes) {
      if (node >= graph.num_nodes()) continue;  // inside a subgraph
      if ((options.cancelled != nullptr && options.cancelled->load()) ||
          options.clock->Now() >= options.deadline) {
        proposal.warnings.push_back(
            "layout search stopped early (deadline or cancellation)");
        break;
      }
      const graph::Node& n = graph.node(node);
      const int rank = n.outputs.empty() ? 0 : n.outputs[0].rank();
      if (rank < 2) continue;
      std::vector<std::vector<int32_t>> candidates =
          LayoutCandidates(rank, options.seed + node);
      // The default order is spelled as "no explicit layout".
      candidates[0].clear();
      const std::vector<int32_t> kept = plan.layout[node];
      std::vector<float> batch;
      for (const std::vector<int32_t>& candidate : candidates) {
        plan.layout[node] = candidate;
        const std::vector<float> f = cost_model::LayoutAssignmentFeatures(
            graph, featurized, plan.layout);
        batch.insert(batch.end(), f.begin(), f.end());
      }
      ASSIGN_OR_RETURN(std::vector<double> scores,
                       model_->Score(*prepared, batch,
                                     static_cast<int32_t>(candidates.size())));
      const size_t best =
          std::min_element(scores.begin(), scores.end()) - scores.begin();
      plan.layout[node] = kept;
      if (scores[best] < current && candidates[best] != kept) {
        plan.layout[node] = candidates[best];
        current = scores[best];
        ++changed;
      }
    }
    predicted_gain = std::exp(start_score[0] - current) - 1;
  }
  proposal.inference_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  simulator::SimulationOptions sim_options;
  sim_options.record_timeline = false;
  ASSIGN_OR_RETURN(simulator::SimulationResult result,
                   simulator.Simulate(plan, sim_options));
  proposal.plan = std::move(plan);
  proposal.step_time_s = result.step_time_s;
  proposal.zero_shot_step_time_s = result.step_time_s;
  proposal.oom = result.oom;
  proposal.warnings.push_back(absl::StrFormat(
      "cost-model layout: %d of %d configurable nodes changed; predicted "
      "gain over the starting layouts %.2f%%; simulator layout-copy time "
      "%.6f s",
      changed, static_cast<int>(featurized.configurable_nodes.size()),
      predicted_gain * 100, result.layout_copy_s));
  return proposal;
}

}  // namespace

std::vector<std::vector<int32_t>> LayoutCandidates(int rank, uint64_t seed) {
  std::vector<int32_t> order(rank);
  std::iota(order.rbegin(), order.rend(), 0);
  std::vector<std::vector<int32_t>> candidates = {order};
  if (rank <= 4) {
    std::vector<int32_t> p = order;
    std::sort(p.begin(), p.end());
    do {
      if (p != order) candidates.push_back(p);
    } while (std::next_permutation(p.begin(), p.end()));
    return candidates;
  }
  auto add = [&](const std::vector<int32_t>& p) {
    if (std::find(candidates.begin(), candidates.end(), p) ==
        candidates.end()) {
      candidates.push_back(p);
    }
  };
  add(std::vector<int32_t>(order.rbegin(), order.rend()));
  for (int r = 1; r < rank; ++r) {
    std::vector<int32_t> rotated = order;
    std::rotate(rotated.begin(), rotated.begin() + r, rotated.end());
    add(rotated);
  }
  std::mt19937_64 rng(seed);
  for (int attempt = 0; attempt < 1000 && static_cast<int>(candidates.size()) <
                                              kMaxSampledCandidates;
       ++attempt) {
    std::vector<int32_t> p = order;
    std::shuffle(p.begin(), p.end(), rng);
    add(p);
  }
  return candidates;
}

PolicyFactory LayoutCostModelFactory() {
  return [](const std::string& directory, const nlohmann::json& card)
             -> absl::StatusOr<std::unique_ptr<Policy>> {
    ASSIGN_OR_RETURN(cost_model::LoadedCostModel loaded,
                     cost_model::LoadCostModelPolicy(
                         directory, card, cost_model::Task::kLayout,
                         TaskSet{false, false, false, true}));
    return std::unique_ptr<Policy>(new LayoutCostModelPolicy(
        std::move(loaded.info), std::move(loaded.model)));
  };
}

}  // namespace gopt::policy
