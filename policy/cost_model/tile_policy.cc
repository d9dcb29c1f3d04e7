#include "policy/cost_model/tile_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "policy/cost_model/cost_model.h"
#include "policy/cost_model/metrics.h"
#include "policy/cost_model/policy_loading.h"
#include "util/status_macros.h"

namespace gopt::policy {
namespace {

using cost_model::CostModel;

constexpr int32_t kMaxCandidates = 64;
constexpr size_t kMaxKernels = 256;
constexpr int64_t kMaxTileExtent = 128;
constexpr int kMaxTileDims = 6;

class TileCostModelPolicy final : public Policy {
 public:
  TileCostModelPolicy(PolicyInfo info, std::unique_ptr<CostModel> model,
                      double default_margin)
      : info_(std::move(info)),
        model_(std::move(model)),
        default_margin_(default_margin) {}

  const PolicyInfo& info() const override { return info_; }

  absl::StatusOr<Proposal> Propose(
      const simulator::Simulator& simulator,
      const ProposeOptions& options) const override {
    (void)simulator;
    (void)options;
    return absl::InvalidArgumentError(absl::StrCat(
        "policy '", info_.name,
        "' decides tile sizes of fused kernels only (OptimizeResponse."
        "kernel_tiles), no plan task"));
  }

  absl::StatusOr<std::vector<KernelTile>> ProposeKernelTiles(
      const simulator::Simulator& simulator,
      const simulator::Plan& plan) const override;

 private:
  PolicyInfo info_;
  std::unique_ptr<CostModel> model_;
  double default_margin_;
};

// The group's root: the last node (in graph order) whose value leaves the
// group or is a graph output (no data consumer); the last node when none
// is.
graph::NodeId KernelRoot(const graph::Graph& graph,
                         const std::vector<graph::NodeId>& nodes,
                         const std::vector<int32_t>& fusion_group) {
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    bool consumed = false;
    for (const graph::Edge& edge : graph.out_edges(*it)) {
      if (edge.control) continue;
      consumed = true;
      if (fusion_group[edge.dst] != fusion_group[*it]) return *it;
    }
    if (!consumed) return *it;
  }
  return nodes.back();
}

}  // namespace

absl::StatusOr<cost_model::FeaturizedGraph> KernelGraph(
    const graph::Graph& graph, const std::vector<graph::NodeId>& nodes) {
  if (nodes.empty()) {
    return absl::InvalidArgumentError("a kernel needs at least one node");
  }
  absl::flat_hash_map<graph::NodeId, int32_t> local;
  for (graph::NodeId node : nodes) {
    if (node < 0 || node >= graph.num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel node ", node, " is not in graph '", graph.name(),
                       "' (", graph.num_nodes(), " nodes)"));
    }
    local[node] = 0;
  }
  // Values read from outside the group, (producer, output), in first-use
  // order; each becomes one parameter node.
  std::map<std::pair<graph::NodeId, int32_t>, int32_t> parameters;
  std::vector<std::pair<graph::NodeId, int32_t>> parameter_order;
  for (graph::NodeId node : nodes) {
    for (const graph::Edge& edge : graph.in_edges(node)) {
      if (edge.control || local.contains(edge.src)) continue;
      const auto key = std::make_pair(edge.src, edge.src_output);
      if (parameters.emplace(key, parameter_order.size()).second) {
        parameter_order.push_back(key);
      }
    }
  }
  cost_model::FeaturizedGraph out;
  out.name = absl::StrCat(graph.name(), ":kernel@", nodes.front());
  auto add = [&out](const graph::Node& node) {
    const std::vector<float> f = cost_model::FeaturizeNode(node);
    out.node_features.insert(out.node_features.end(), f.begin(), f.end());
    out.opcodes.push_back(cost_model::TpuGraphsOpcodeId(node.op));
    ++out.num_nodes;
  };
  for (const auto& [producer, output] : parameter_order) {
    const graph::Node& source = graph.node(producer);
    graph::Node parameter;
    parameter.name = absl::StrCat("param.", producer);
    parameter.op = "parameter";
    if (output >= 0 && output < static_cast<int32_t>(source.outputs.size())) {
      parameter.outputs = {source.outputs[output]};
    } else {
      parameter.outputs = source.outputs;
    }
    add(parameter);
  }
  const int32_t first = out.num_nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    local[nodes[i]] = first + static_cast<int32_t>(i);
    add(graph.node(nodes[i]));
  }
  for (graph::NodeId node : nodes) {
    for (const graph::Edge& edge : graph.in_edges(node)) {
      if (edge.control) continue;
      const auto it = local.find(edge.src);
      out.edge_src.push_back(it != local.end()
                                 ? it->second
                                 : parameters.at({edge.src, edge.src_output}));
      out.edge_dst.push_back(local.at(node));
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> TileCandidates(
    const std::vector<int64_t>& dims, int32_t max_candidates, uint64_t seed) {
  const int rank = std::min<int>(dims.size(), kMaxTileDims);
  if (rank == 0) return {{}};
  // Per dimension: powers of two below the (capped) extent, and the extent.
  std::vector<std::vector<int64_t>> choices(rank);
  std::vector<int64_t> default_tile(rank, 1);
  for (int d = 0; d < rank; ++d) {
    const int64_t extent = std::clamp<int64_t>(dims[d], 1, kMaxTileExtent);
    for (int64_t p = 1; p < extent; p *= 2) choices[d].push_back(p);
    choices[d].push_back(extent);
    if (d == rank - 1) default_tile[d] = extent;
    if (d == rank - 2) default_tile[d] = std::min<int64_t>(extent, 8);
  }
  std::vector<std::vector<int64_t>> candidates = {default_tile};
  const int32_t wanted = std::max(max_candidates, 1);
  double total = 1;
  for (const auto& c : choices) total *= static_cast<double>(c.size());
  if (total <= wanted) {
    // Every combination, in odometer order.
    std::vector<size_t> index(rank, 0);
    while (true) {
      std::vector<int64_t> tile(rank);
      for (int d = 0; d < rank; ++d) tile[d] = choices[d][index[d]];
      if (tile != default_tile) candidates.push_back(tile);
      int d = rank - 1;
      while (d >= 0 && ++index[d] == choices[d].size()) index[d--] = 0;
      if (d < 0) break;
    }
    return candidates;
  }
  std::mt19937_64 rng(seed);
  std::set<std::vector<int64_t>> seen = {default_tile};
  for (int attempt = 0; attempt < 20 * wanted &&
                        static_cast<int32_t>(candidates.size()) < wanted;
       ++attempt) {
    std::vector<int64_t> tile(rank);
    for (int d = 0; d < rank; ++d) {
      tile[d] = choices[d][std::uniform_int_distribution<size_t>(
          0, choices[d].size() - 1)(rng)];
    }
    if (seen.insert(tile).second) candidates.push_back(tile);
  }
  return candidates;
}

std::vector<float> OutputTileFeatures(const std::vector<int64_t>& tile) {
  std::vector<float> features(cost_model::kTileConfigFeatures, 0.0f);
  // Lists: kernel (0-7, absent), output (8-15), input (16-23, absent).
  double sum = 0;
  double product = tile.empty() ? 0 : 1;
  for (size_t d = 0; d < tile.size() && d < kMaxTileDims; ++d) {
    features[8 + d] = static_cast<float>(tile[d]);
    sum += static_cast<double>(tile[d]);
    product *= static_cast<double>(tile[d]);
  }
  features[14] = static_cast<float>(sum);
  features[15] = static_cast<float>(product);
  return features;
}

absl::StatusOr<std::vector<KernelTile>> TileCostModelPolicy::ProposeKernelTiles(
    const simulator::Simulator& simulator, const simulator::Plan& plan) const {
  const graph::Graph& graph = simulator.graph();
  if (plan.fusion_group.empty()) return std::vector<KernelTile>{};
  if (static_cast<int>(plan.fusion_group.size()) != graph.num_nodes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan has ", plan.fusion_group.size(),
                     " fusion groups for ", graph.num_nodes(), " nodes"));
  }
  std::map<int32_t, std::vector<graph::NodeId>> groups;
  for (graph::NodeId node = 0; node < graph.num_nodes(); ++node) {
    if (plan.fusion_group[node] >= 0) {
      groups[plan.fusion_group[node]].push_back(node);
    }
  }
  std::vector<KernelTile> tiles;
  for (const auto& [group, nodes] : groups) {
    if (tiles.size() >= kMaxKernels) break;
    ASSIGN_OR_RETURN(cost_model::FeaturizedGraph kernel,
                     KernelGraph(graph, nodes));
    const graph::Node& root =
        graph.node(KernelRoot(graph, nodes, plan.fusion_group));
    const std::vector<int64_t> dims =
        root.outputs.empty() ? std::vector<int64_t>{} : root.outputs[0].dims;
    const std::vector<std::vector<int64_t>> candidates = TileCandidates(
        dims, kMaxCandidates, static_cast<uint64_t>(group) * 7919 + 1);
    std::vector<float> features;
    for (const std::vector<int64_t>& tile : candidates) {
      const std::vector<float> f = OutputTileFeatures(tile);
      features.insert(features.end(), f.begin(), f.end());
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const cost_model::PreparedGraph> prepared,
                     model_->Prepare(kernel));
    cost_model::ScoreOptions score_options;
    score_options.batch_size = kMaxCandidates;
    score_options.default_tile_config = OutputTileFeatures(candidates[0]);
    ASSIGN_OR_RETURN(
        std::vector<double> scores,
        model_->Score(*prepared, features,
                      static_cast<int32_t>(candidates.size()), score_options));
    const std::vector<double> decided = cost_model::WithDefaultMargin(
        scores, /*default_config=*/0, default_margin_);
    const size_t best =
        std::min_element(decided.begin(), decided.end()) - decided.begin();
    KernelTile tile;
    tile.fusion_group = group;
    tile.nodes = nodes;
    tile.output_tile = candidates[best];
    tile.default_output_tile = candidates[0];
    tile.predicted_gain_over_default =
        best == 0 ? 0.0 : std::exp(scores[0] - scores[best]) - 1;
    tile.candidates_scored = static_cast<int32_t>(candidates.size());
    tiles.push_back(std::move(tile));
  }
  return tiles;
}

PolicyFactory TileCostModelFactory() {
  return [](const std::string& directory, const nlohmann::json& card)
             -> absl::StatusOr<std::unique_ptr<Policy>> {
    ASSIGN_OR_RETURN(cost_model::LoadedCostModel loaded,
                     cost_model::LoadCostModelPolicy(
                         directory, card, cost_model::Task::kTile,
                         TaskSet{false, false, false, false}));
    double margin = 0;
    const auto decision = card.find("decision");
    if (decision != card.end() && decision->is_object()) {
      const auto m = decision->find("default_margin");
      if (m != decision->end()) {
        if (!m->is_number() || m->get<double>() < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              directory,
              "/card.json: decision.default_margin must be a number >= 0"));
        }
        margin = m->get<double>();
      }
    }
    return std::unique_ptr<Policy>(new TileCostModelPolicy(
        std::move(loaded.info), std::move(loaded.model), margin));
  };
}

}  // namespace gopt::policy
