#include "policy/cost_model/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <numeric>
#include <random>
#include <utility>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"
#include "policy/cost_model/network.h"
#include "policy/torch_checkpoint.h"
#include "policy/torch_util.h"
#include "util/status_macros.h"

namespace gopt::policy::cost_model {

// Checkpoint layout versions: Save writes the network's current layout;
// Load reads it and every older one (network.h, kNetworkFormatVersion).
constexpr int64_t kCheckpointFormatVersion = kNetworkFormatVersion;
constexpr int64_t kOldestCheckpointFormatVersion = 1;

// Configurations per GNN pass when scoring by distinct node states: states
// are shared within a chunk, and its worst case (all states distinct) is
// the plain pass's activations for this many configurations.
constexpr int32_t kDistinctStatesChunk = 256;

class PreparedGraph {
 public:
  std::vector<SegmentTensors> segments;
  int64_t num_configurable = 0;  // of the original graph
  int32_t kept_nodes = 0;
};

struct CostModel::Impl {
  CostModelOptions options;
  CostModelNet net{nullptr};
};

namespace {

// The nodes pruning keeps (sorted), see CostModelOptions::prune_hops.
std::vector<int32_t> KeptNodes(const FeaturizedGraph& graph, int32_t hops) {
  std::vector<int32_t> all(graph.num_nodes);
  std::iota(all.begin(), all.end(), 0);
  if (hops < 0 || graph.configurable_nodes.empty()) return all;
  std::vector<std::vector<int32_t>> neighbours(graph.num_nodes);
  for (size_t e = 0; e < graph.edge_src.size(); ++e) {
    neighbours[graph.edge_src[e]].push_back(graph.edge_dst[e]);
    neighbours[graph.edge_dst[e]].push_back(graph.edge_src[e]);
  }
  std::vector<int32_t> distance(graph.num_nodes, -1);
  std::deque<int32_t> queue;
  for (int32_t node : graph.configurable_nodes) {
    if (distance[node] == 0) continue;
    distance[node] = 0;
    queue.push_back(node);
  }
  while (!queue.empty()) {
    const int32_t node = queue.front();
    queue.pop_front();
    if (distance[node] == hops) continue;
    for (int32_t next : neighbours[node]) {
      if (distance[next] >= 0) continue;
      distance[next] = distance[node] + 1;
      queue.push_back(next);
    }
  }
  std::vector<int32_t> kept;
  for (int32_t node = 0; node < graph.num_nodes; ++node) {
    if (distance[node] >= 0) kept.push_back(node);
  }
  return kept;
}

std::shared_ptr<PreparedGraph> PrepareGraph(const FeaturizedGraph& graph,
                                            const CostModelOptions& options) {
  auto prepared = std::make_shared<PreparedGraph>();
  prepared->num_configurable =
      static_cast<int64_t>(graph.configurable_nodes.size());
  const std::vector<int32_t> kept = KeptNodes(graph, options.prune_hops);
  prepared->kept_nodes = static_cast<int32_t>(kept.size());
  const int64_t size = options.segment_size > 0
                           ? options.segment_size
                           : std::max<int64_t>(1, kept.size());
  // Position of each original node in `kept` (-1 = pruned).
  std::vector<int64_t> position(graph.num_nodes, -1);
  for (size_t i = 0; i < kept.size(); ++i) position[kept[i]] = i;
  std::vector<int64_t> slot(graph.num_nodes, -1);
  for (size_t k = 0; k < graph.configurable_nodes.size(); ++k) {
    slot[graph.configurable_nodes[k]] = static_cast<int64_t>(k);
  }
  const int64_t num_segments =
      (static_cast<int64_t>(kept.size()) + size - 1) / size;
  // The data edges inside each segment, in local ids.
  std::vector<std::vector<int64_t>> edge_src(num_segments);
  std::vector<std::vector<int64_t>> edge_dst(num_segments);
  for (size_t e = 0; e < graph.edge_src.size(); ++e) {
    const int64_t src = position[graph.edge_src[e]];
    const int64_t dst = position[graph.edge_dst[e]];
    if (src < 0 || dst < 0 || src / size != dst / size) continue;
    const int64_t s = src / size;
    const int64_t base = s * size;
    edge_src[s].push_back(src - base);
    edge_dst[s].push_back(dst - base);
  }
  for (int64_t s = 0; s < num_segments; ++s) {
    const int64_t begin = s * size;
    const int64_t end =
        std::min<int64_t>(begin + size, static_cast<int64_t>(kept.size()));
    const int64_t n = end - begin;
    SegmentTensors segment;
    segment.num_nodes = n;
    segment.num_edges = static_cast<int64_t>(edge_src[s].size());
    std::vector<float> features(n * kNodeFeatures);
    std::vector<int64_t> opcodes(n);
    std::vector<int64_t> config_nodes;
    std::vector<int64_t> config_slots;
    for (int64_t i = 0; i < n; ++i) {
      const int32_t node = kept[begin + i];
      std::copy_n(graph.node_features.begin() +
                      static_cast<int64_t>(node) * kNodeFeatures,
                  kNodeFeatures, features.begin() + i * kNodeFeatures);
      opcodes[i] = graph.opcodes[node];
      if (slot[node] >= 0) {
        config_nodes.push_back(i);
        config_slots.push_back(slot[node]);
      }
    }
    segment.node_slots.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      segment.node_slots[i] = static_cast<int32_t>(slot[kept[begin + i]]);
    }
    segment.node_features =
        SignedLog(torch::tensor(features).reshape({n, kNodeFeatures}));
    segment.opcodes = torch::tensor(opcodes, torch::kLong);
    segment.edges = SageGraph::FromEdges(edge_src[s], edge_dst[s], n,
                                         /*with_mean_matrix=*/true);
    segment.config_nodes = torch::tensor(config_nodes, torch::kLong);
    segment.config_slots = torch::tensor(config_slots, torch::kLong);
    segment.num_config_nodes = static_cast<int64_t>(config_nodes.size());
    segment.config_slots_are_all =
        segment.num_config_nodes == prepared->num_configurable;
    for (size_t k = 0; k < config_slots.size(); ++k) {
      segment.config_slots_are_all = segment.config_slots_are_all &&
                                     config_slots[k] == static_cast<int64_t>(k);
    }
    prepared->segments.push_back(std::move(segment));
  }
  return prepared;
}

// Configurations `configs` of `features` as the network's input tensor.
// Tile rows of a tile_relative_to_default model get the kernel default
// (`default_tile`, kTileConfigFeatures values, or empty when unknown) and
// the known flag appended (network.h, kTileRelativeRowWidth).
torch::Tensor ConfigTensor(const std::vector<float>& features,
                           const CostModelOptions& options,
                           int64_t num_configurable,
                           const std::vector<int64_t>& configs,
                           const std::vector<float>& default_tile) {
  const Task task = options.task;
  const int64_t width = task == Task::kTile
                            ? kTileConfigFeatures
                            : num_configurable * kLayoutConfigFeatures;
  const bool relative = task == Task::kTile && options.tile_relative_to_default;
  const int64_t row = relative ? kTileRelativeRowWidth : width;
  const bool known = default_tile.size() == kTileConfigFeatures;
  std::vector<float> batch(configs.size() * row, 0.0f);
  for (size_t i = 0; i < configs.size(); ++i) {
    std::copy_n(features.begin() + configs[i] * width, width,
                batch.begin() + i * row);
    if (relative && known) {
      std::copy(default_tile.begin(), default_tile.end(),
                batch.begin() + i * row + kTileConfigFeatures);
      batch[i * row + 2 * kTileConfigFeatures] = 1.0f;
    }
  }
  torch::Tensor t = torch::tensor(batch);
  const int64_t c = static_cast<int64_t>(configs.size());
  if (task == Task::kTile) return t.reshape({c, row});
  return t.reshape({c, num_configurable, kLayoutConfigFeatures});
}

// The default configuration's features of a tile group, empty when the
// group has no default.
std::vector<float> DefaultTileConfig(const ConfigGroup& group) {
  if (group.task != Task::kTile || group.default_config < 0) return {};
  const auto begin = group.config_features.begin() +
                     group.default_config * kTileConfigFeatures;
  return std::vector<float>(begin, begin + kTileConfigFeatures);
}

// Scores under the ranking loss are divided by the spread of the group's
// log runtimes, so the loss sees the same difficulty in every group and the
// raw scores stay in log-runtime units.
double LogRuntimeSpread(const std::vector<double>& runtimes) {
  double mean = 0;
  for (double r : runtimes) mean += std::log(r);
  mean /= runtimes.size();
  double var = 0;
  for (double r : runtimes) var += (std::log(r) - mean) * (std::log(r) - mean);
  return std::max(std::sqrt(var / runtimes.size()), 1e-4);
}

absl::Status CheckOptions(const CostModelOptions& o) {
  auto in = [](int64_t v, int64_t lo, int64_t hi) {
    return v >= lo && v <= hi;
  };
  if (!in(o.hidden_dim, 1, 1024) || !in(o.opcode_embedding_dim, 1, 1024) ||
      !in(o.sage_layers, 1, 8) || o.prune_hops < -1 || o.segment_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model options out of range: ", o.ToJson().dump()));
  }
  if (o.cross_config_attention && o.hidden_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        "cross_config_attention needs an even hidden_dim (2 heads)");
  }
  return absl::OkStatus();
}

}  // namespace

nlohmann::json CostModelOptions::ToJson() const {
  return {{"task", std::string(TaskName(task))},
          {"hidden_dim", hidden_dim},
          {"opcode_embedding_dim", opcode_embedding_dim},
          {"sage_layers", sage_layers},
          {"cross_config_attention", cross_config_attention},
          {"prune_hops", prune_hops},
          {"segment_size", segment_size},
          {"tile_relative_to_default", tile_relative_to_default}};
}

absl::StatusOr<CostModelOptions> CostModelOptions::FromJson(
    const nlohmann::json& json) {
  CostModelOptions o;
  try {
    ASSIGN_OR_RETURN(o.task, ParseTask(json.at("task").get<std::string>()));
    o.hidden_dim = json.at("hidden_dim").get<int32_t>();
    o.opcode_embedding_dim = json.at("opcode_embedding_dim").get<int32_t>();
    o.sage_layers = json.at("sage_layers").get<int32_t>();
    o.cross_config_attention = json.at("cross_config_attention").get<bool>();
    o.prune_hops = json.at("prune_hops").get<int32_t>();
    o.segment_size = json.at("segment_size").get<int32_t>();
    // Absent from checkpoints written before the option existed.
    o.tile_relative_to_default = json.value("tile_relative_to_default", false);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model options: ", e.what()));
  }
  RETURN_IF_ERROR(CheckOptions(o));
  return o;
}

absl::StatusOr<RankingLoss> ParseRankingLoss(absl::string_view name) {
  if (name == "hinge") return RankingLoss::kPairwiseHinge;
  if (name == "listmle") return RankingLoss::kListMle;
  if (name == "hinge+listmle") return RankingLoss::kHingeListMle;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ranking loss '", name,
                   "' (expected hinge, listmle or hinge+listmle)"));
}

absl::string_view RankingLossName(RankingLoss loss) {
  switch (loss) {
    case RankingLoss::kPairwiseHinge:
      return "hinge";
    case RankingLoss::kListMle:
      return "listmle";
    case RankingLoss::kHingeListMle:
      return "hinge+listmle";
  }
  return "hinge";
}

CostModel::CostModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CostModel::~CostModel() = default;

const CostModelOptions& CostModel::options() const { return impl_->options; }

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::Create(
    const CostModelOptions& options, uint64_t seed) {
  RETURN_IF_ERROR(CheckOptions(options));
  try {
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->net = WithTorchSeed(seed, [&] { return CostModelNet(options); });
    return std::unique_ptr<CostModel>(new CostModel(std::move(impl)));
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "creating the cost model");
  }
}

absl::Status CostModel::Save(const std::string& path) const {
  try {
    torch::serialize::OutputArchive archive;
    impl_->net->save(archive);
    WriteCheckpointHeader({kCheckpointFormatVersion, impl_->options.ToJson()},
                          &archive);
    archive.save_to(path);
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              absl::StrCat("writing checkpoint '", path, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CostModel>> CostModel::Load(
    const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(
        absl::StrCat("cost model checkpoint '", path, "' does not exist"));
  }
  const std::string where = absl::StrCat("checkpoint '", path, "'");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    ASSIGN_OR_RETURN(
        const CheckpointHeader header,
        ReadCheckpointHeader(
            archive, kOldestCheckpointFormatVersion, kCheckpointFormatVersion,
            absl::StatusCode::kInvalidArgument, "gopt cost model", where));
    ASSIGN_OR_RETURN(CostModelOptions options,
                     CostModelOptions::FromJson(header.options));
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->net = CostModelNet(options);
    impl->net->LoadParameters(archive, header.format_version);
    impl->net->eval();
    return std::unique_ptr<CostModel>(new CostModel(std::move(impl)));
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(
        e, absl::StatusCode::kInvalidArgument,
        absl::StrCat(where, " cannot be read as a cost model"));
  }
}

absl::StatusOr<std::shared_ptr<const PreparedGraph>> CostModel::Prepare(
    const FeaturizedGraph& graph) const {
  ConfigGroup probe;
  probe.graph = graph;
  probe.task = impl_->options.task;
  probe.num_configs = 1;
  probe.runtimes = {1.0};
  probe.config_features.assign(probe.config_width(), -1.0f);
  RETURN_IF_ERROR(ValidateConfigGroup(probe));
  try {
    return std::shared_ptr<const PreparedGraph>(
        PrepareGraph(graph, impl_->options));
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "preparing a graph");
  }
}

int32_t CostModel::PreparedNodes(const PreparedGraph& graph) {
  return graph.kept_nodes;
}

int32_t CostModel::PreparedSegments(const PreparedGraph& graph) {
  return static_cast<int32_t>(graph.segments.size());
}

absl::StatusOr<std::vector<double>> CostModel::Score(
    const PreparedGraph& graph, const std::vector<float>& config_features,
    int32_t num_configs, const ScoreOptions& options) const {
  const Task task = impl_->options.task;
  const int64_t width = task == Task::kTile
                            ? kTileConfigFeatures
                            : graph.num_configurable * kLayoutConfigFeatures;
  if (num_configs < 0 ||
      config_features.size() != static_cast<size_t>(num_configs * width)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scoring: ", config_features.size(), " config features for ",
        num_configs, " configurations of width ", width));
  }
  const std::vector<float>& default_tile = options.default_tile_config;
  if (!default_tile.empty() && default_tile.size() != kTileConfigFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scoring: the default tile configuration has ", default_tile.size(),
        " features, not ", kTileConfigFeatures));
  }
  const bool relative =
      task == Task::kTile && impl_->options.tile_relative_to_default;
  const bool distinct = task == Task::kLayout && options.distinct_node_states;
  const int32_t batch = std::max(options.batch_size, 1);
  // The GNN runs over chunks of configurations: a head batch for the plain
  // pass (its activations grow with nodes x configurations), more for
  // distinct states, whose work grows with the distinct states only.
  const int32_t chunk =
      distinct ? std::max(batch, kDistinctStatesChunk) : batch;
  std::vector<double> scores;
  scores.reserve(num_configs);
  try {
    torch::NoGradGuard no_grad;
    CostModelNetImpl& net = *impl_->net;
    std::vector<torch::Tensor> node_inputs;
    for (const SegmentTensors& segment : graph.segments) {
      node_inputs.push_back(net.NodeInput(segment));
    }
    const double kept_nodes = static_cast<double>(graph.kept_nodes);
    double config_nodes = 0;
    for (const SegmentTensors& segment : graph.segments) {
      config_nodes += static_cast<double>(segment.num_config_nodes);
    }
    // Per configuration: the GNN's sums over all segments, per chunk of
    // configurations. Chunks are independent: LibTorch's intra-op threads
    // share them (each chunk's operators then run on one thread), and the
    // result does not depend on the thread count.
    const int32_t num_chunks = (num_configs + chunk - 1) / chunk;
    std::vector<torch::Tensor> sums(num_chunks);
    auto score_chunks = [&](int64_t first_chunk, int64_t last_chunk) {
      torch::NoGradGuard no_grad_here;  // grad mode is thread-local
      for (int64_t k = first_chunk; k < last_chunk; ++k) {
        const int32_t start = static_cast<int32_t>(k) * chunk;
        const int32_t end = std::min(num_configs, start + chunk);
        torch::Tensor config;
        if (relative) {
          std::vector<int64_t> rows(end - start);
          std::iota(rows.begin(), rows.end(), start);
          config = ConfigTensor(config_features, impl_->options,
                                graph.num_configurable, rows, default_tile);
        } else {
          std::vector<int64_t> shape = {end - start};
          if (task == Task::kTile) {
            shape.push_back(kTileConfigFeatures);
          } else {
            shape.push_back(graph.num_configurable);
            shape.push_back(kLayoutConfigFeatures);
          }
          // A view of the caller's features: no copy.
          config = torch::from_blob(
              const_cast<float*>(config_features.data()) + start * width, shape,
              torch::kFloat);
        }
        torch::Tensor total;
        for (size_t s = 0; s < graph.segments.size(); ++s) {
          const SegmentSums part =
              distinct ? net.SegmentOfDistinctStates(graph.segments[s],
                                                     node_inputs[s], config)
                       : net.Segment(graph.segments[s], node_inputs[s], config);
          total = total.defined() ? total + part.sums : part.sums;
        }
        sums[k] = total;
      }
    };
    if (num_chunks > 1) {
      at::parallel_for(0, num_chunks, /*grain_size=*/1, score_chunks);
    } else {
      score_chunks(0, num_chunks);
    }
    if (num_configs == 0) return scores;
    const torch::Tensor all = torch::cat(sums, 0);
    for (int32_t start = 0; start < num_configs; start += batch) {
      SegmentSums totals;
      totals.sums = all.narrow(0, start, std::min(num_configs - start, batch));
      totals.num_nodes = kept_nodes;
      totals.num_config_nodes = config_nodes;
      const torch::Tensor out =
          net.Head(totals).to(torch::kDouble).contiguous();
      scores.insert(scores.end(), out.data_ptr<double>(),
                    out.data_ptr<double>() + out.numel());
    }
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "scoring configurations");
  }
  return scores;
}

absl::StatusOr<std::vector<double>> CostModel::ScoreGroup(
    const ConfigGroup& group) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const PreparedGraph> prepared,
                   Prepare(group.graph));
  ScoreOptions options;
  options.default_tile_config = DefaultTileConfig(group);
  return Score(*prepared, group.config_features, group.num_configs, options);
}

absl::StatusOr<TrainReport> CostModel::Train(
    const std::vector<ConfigGroup>& groups, const TrainOptions& options) {
  if (groups.empty()) {
    return absl::InvalidArgumentError("training needs at least one group");
  }
  for (const ConfigGroup& group : groups) {
    if (group.task != impl_->options.task) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group '", group.graph.name, "' is a ", TaskName(group.task),
          " group; the model ranks ", TaskName(impl_->options.task)));
    }
    RETURN_IF_ERROR(ValidateConfigGroup(group));
  }
  const auto start = std::chrono::steady_clock::now();
  TrainReport report;
  try {
    SetTorchIntraOpThreads(options.num_threads);
    std::mt19937_64 rng(options.seed);
    std::vector<std::shared_ptr<PreparedGraph>> prepared;
    std::vector<double> spreads;
    std::vector<std::vector<float>> default_tiles;
    // GST historical embedding table: per group (configs, segments, 2h)
    // sums, and whether each entry has been computed.
    std::vector<torch::Tensor> history;
    std::vector<std::vector<uint8_t>> filled;
    const int64_t h = impl_->options.hidden_dim;
    for (const ConfigGroup& group : groups) {
      prepared.push_back(PrepareGraph(group.graph, impl_->options));
      spreads.push_back(LogRuntimeSpread(group.runtimes));
      default_tiles.push_back(DefaultTileConfig(group));
      const int64_t segments =
          static_cast<int64_t>(prepared.back()->segments.size());
      history.push_back(segments > 1
                            ? torch::zeros({group.num_configs, segments, 2 * h})
                            : torch::Tensor());
      filled.emplace_back(segments > 1 ? group.num_configs * segments : 0, 0);
    }
    torch::optim::Adam optimizer(
        impl_->net->parameters(),
        torch::optim::AdamOptions(options.learning_rate));
    impl_->net->train();
    std::vector<double> losses;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    for (int32_t step = 0; step < options.steps; ++step) {
      const size_t g = step % groups.size();
      const ConfigGroup& group = groups[g];
      const PreparedGraph& graph = *prepared[g];
      std::vector<int64_t> configs(group.num_configs);
      std::iota(configs.begin(), configs.end(), 0);
      std::shuffle(configs.begin(), configs.end(), rng);
      configs.resize(std::min<int64_t>(configs.size(),
                                       std::max(options.configs_per_step, 2)));
      if (configs.size() < 2) continue;
      std::vector<double> runtimes;
      for (int64_t c : configs) runtimes.push_back(group.runtimes[c]);
      const torch::Tensor config =
          ConfigTensor(group.config_features, impl_->options,
                       graph.num_configurable, configs, default_tiles[g]);

      const int64_t num_segments = static_cast<int64_t>(graph.segments.size());
      const int64_t trained =
          num_segments > 1
              ? std::uniform_int_distribution<int64_t>(0, num_segments - 1)(rng)
              : 0;
      SegmentSums totals = impl_->net->Segment(
          graph.segments[trained],
          impl_->net->NodeInput(graph.segments[trained]), config);
      if (num_segments > 1) {
        // Historical embeddings of the other segments, each dropped with
        // probability segment_dropout; the kept ones are scaled up so the
        // sums keep their expected size.
        const torch::Tensor index = torch::tensor(configs, torch::kLong);
        const torch::Tensor own_sums = totals.sums.detach();
        std::vector<int64_t> kept;
        for (int64_t s = 0; s < num_segments; ++s) {
          if (s != trained && coin(rng) >= options.segment_dropout) {
            kept.push_back(s);
          }
        }
        const double scale =
            kept.empty() ? 0.0
                         : static_cast<double>(num_segments - 1) / kept.size();
        for (int64_t s : kept) {
          bool all_filled = true;
          for (int64_t c : configs) {
            all_filled = all_filled && filled[g][c * num_segments + s];
          }
          if (!all_filled) {
            torch::NoGradGuard no_grad;
            const SegmentSums fresh = impl_->net->Segment(
                graph.segments[s], impl_->net->NodeInput(graph.segments[s]),
                config);
            history[g].index_put_({index, s}, fresh.sums);
            for (int64_t c : configs) filled[g][c * num_segments + s] = 1;
          }
          totals.sums = totals.sums + scale * history[g].index({index, s});
          totals.num_nodes += scale * graph.segments[s].num_nodes;
          totals.num_config_nodes += scale * graph.segments[s].num_config_nodes;
        }
        history[g].index_put_({index, trained}, own_sums);
        for (int64_t c : configs) filled[g][c * num_segments + trained] = 1;
      }
      const torch::Tensor scores = impl_->net->Head(totals);
      const torch::Tensor rt = torch::tensor(runtimes, torch::kDouble);
      const torch::Tensor scaled = scores / spreads[g];
      torch::Tensor loss =
          options.loss == RankingLoss::kListMle
              ? ListMleLoss(scaled, rt)
              : PairwiseHingeLoss(scaled, rt, options.hinge_margin,
                                  options.tie_tolerance);
      if (options.loss == RankingLoss::kHingeListMle) {
        loss = loss + ListMleLoss(scaled, rt);
      }
      if (options.regression_weight > 0) {
        loss = loss + options.regression_weight *
                          CentredLogRuntimeLoss(scaled, rt, spreads[g]);
      }
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(impl_->net->parameters(), 1.0);
      optimizer.step();
      losses.push_back(loss.item<double>());
      ++report.steps;
    }
    impl_->net->eval();
    if (!losses.empty()) {
      const size_t tenth = std::max<size_t>(1, losses.size() / 10);
      report.first_loss =
          std::accumulate(losses.begin(), losses.begin() + tenth, 0.0) / tenth;
      report.final_loss =
          std::accumulate(losses.end() - tenth, losses.end(), 0.0) / tenth;
    }
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "training the cost model");
  }
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return report;
}

double PairwiseHingeLossValue(const std::vector<double>& scores,
                              const std::vector<double>& runtimes,
                              double margin) {
  return PairwiseHingeLoss(torch::tensor(scores, torch::kDouble),
                           torch::tensor(runtimes, torch::kDouble), margin)
      .item<double>();
}

double ListMleLossValue(const std::vector<double>& scores,
                        const std::vector<double>& runtimes) {
  return ListMleLoss(torch::tensor(scores, torch::kDouble),
                     torch::tensor(runtimes, torch::kDouble))
      .item<double>();
}

}  // namespace gopt::policy::cost_model
