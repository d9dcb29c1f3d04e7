#include "policy/go/network.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <mutex>
#include <utility>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"
#include "policy/go/actions.h"

namespace gopt::policy::go {
namespace {

namespace nn = torch::nn;

// Masked logits: low enough to vanish in softmax, finite so that
// probability * log-probability stays 0 rather than NaN.
constexpr float kMaskedLogit = -1e9f;
// Segments per attention block: bounds the [segments, heads, L, 2L] score
// tensor (4 segments of 256, one head: 2 MiB) and gives the intra-op
// threads several blocks to share; each block recomputes the keys and
// values of one segment before it (its memory).
constexpr int64_t kSegmentChunk = 4;

// Rows per block of row-wise work in ConcatBlocks.
constexpr int64_t kRowBlock = 2048;

// Evaluates `block(begin, end)` over [0, count) split into near-equal
// ranges of at most `grain` items and concatenates the results along
// dimension 0, so that the temporaries of one block (the attention scores
// above all) stay small. The split depends only on `count` and `grain`, so
// the result does not depend on the thread count; it is even (when there
// is more than one block) so that two threads get equal shares. Without
// gradient (inference) the blocks are shared among LibTorch's intra-op
// threads, each block running its operators on one thread: a few large
// tasks per layer instead of a parallel region per small operator. With
// gradient (training) they run in order on the calling thread.
torch::Tensor ConcatBlocks(
    int64_t count, int64_t grain,
    const std::function<torch::Tensor(int64_t, int64_t)>& block) {
  int64_t blocks = (count + grain - 1) / grain;
  if (blocks > 1 && blocks % 2 == 1) ++blocks;
  std::vector<torch::Tensor> results(blocks);
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      results[b] = block(count * b / blocks, count * (b + 1) / blocks);
    }
  };
  if (torch::GradMode::is_enabled() || blocks < 2) {
    run(0, blocks);
  } else {
    at::parallel_for(0, blocks, /*grain_size=*/1,
                     [&](int64_t first, int64_t last) {
                       // Grad mode is thread-local: the pool's threads
                       // must not record autograd graphs either.
                       torch::NoGradGuard no_grad;
                       run(first, last);
                     });
  }
  return blocks == 1 ? results[0] : torch::cat(results, 0);
}

// Groups the edges (src[e], dst[e]) by `key` (src or dst): `target` is the
// key node, `neighbour` the other end. A stable order keeps each node's
// edges in their original order, so sums over them add up as before.
EdgeGroups GroupEdges(const std::vector<int64_t>& key,
                      const std::vector<int64_t>& other, int64_t n) {
  const int64_t e = static_cast<int64_t>(key.size());
  EdgeGroups groups;
  groups.offsets.assign(n + 1, 0);
  for (int64_t k : key) ++groups.offsets[k + 1];
  for (int64_t i = 0; i < n; ++i) {
    groups.offsets[i + 1] += groups.offsets[i];
  }
  std::vector<int64_t> target(e), neighbour(e);
  std::vector<int64_t> next(groups.offsets.begin(), groups.offsets.end() - 1);
  for (int64_t i = 0; i < e; ++i) {
    const int64_t slot = next[key[i]]++;
    target[slot] = key[i];
    neighbour[slot] = other[i];
  }
  std::vector<float> degree(n);
  for (int64_t i = 0; i < n; ++i) {
    degree[i] = static_cast<float>(
        std::max<int64_t>(1, groups.offsets[i + 1] - groups.offsets[i]));
  }
  groups.target = torch::tensor(target, torch::kInt64);
  groups.neighbour = torch::tensor(neighbour, torch::kInt64);
  groups.degree = torch::tensor(degree, torch::kFloat32).unsqueeze(1);
  return groups;
}

// Drops LibTorch's one-time notice that scatter_reduce is a beta API (the
// "amax" reduction Aggregate needs has no stable equivalent), which would
// otherwise reach the terminal of every gopt user; any other warning goes
// on to the handler it replaces. Installed per call with a
// WarningHandlerGuard (LibTorch keeps the handler per thread), around the
// scatter_reduce call alone.
class BetaNoticeFilter final : public c10::WarningHandler {
 public:
  explicit BetaNoticeFilter(c10::WarningHandler* next) : next_(next) {}

  void process(const c10::SourceLocation& source_location,
               const std::string& msg, const bool verbatim) override {
    if (msg.find("is in beta and the API may change") != std::string::npos) {
      return;
    }
    if (next_ != nullptr) next_->process(source_location, msg, verbatim);
  }

 private:
  c10::WarningHandler* next_;
};

// Mean and max of the messages `m` of the neighbours of rows [begin, end),
// as [end - begin, 2 * width] (mean, then max; zeros where a node has no
// neighbours).
torch::Tensor Aggregate(const torch::Tensor& m, const EdgeGroups& groups,
                        int64_t begin, int64_t end) {
  const int64_t rows = end - begin;
  const int64_t width = m.size(1);
  torch::Tensor mean = torch::zeros({rows, width}, m.options());
  torch::Tensor max = torch::zeros({rows, width}, m.options());
  const int64_t first = groups.offsets[begin];
  const int64_t last = groups.offsets[end];
  if (last > first) {
    torch::Tensor messages =
        m.index_select(0, groups.neighbour.slice(0, first, last));
    torch::Tensor local = groups.target.slice(0, first, last) - begin;
    mean =
        mean.index_add(0, local, messages) / groups.degree.slice(0, begin, end);
    BetaNoticeFilter filter(c10::Warning::get_warning_handler());
    c10::Warning::WarningHandlerGuard quiet(&filter);
    max = max.scatter_reduce(0, local.unsqueeze(1).expand({-1, width}),
                             messages, "amax", /*include_self=*/false);
  }
  return torch::cat({mean, max}, 1);
}

torch::Tensor FromFloats(const std::vector<float>& values, int64_t rows,
                         int64_t cols) {
  return torch::from_blob(const_cast<float*>(values.data()), {rows, cols},
                          torch::kFloat32)
      .clone();
}

// [n, d] float: 1 at (node, device[node]), rows of zeros where the device
// is -1 or the vector is not filled.
torch::Tensor OneHotDevices(const std::vector<int32_t>& device, int64_t n,
                            int64_t d) {
  std::vector<float> one_hot(static_cast<size_t>(n * d), 0.0f);
  if (static_cast<int64_t>(device.size()) == n) {
    for (int64_t i = 0; i < n; ++i) {
      if (device[i] >= 0 && device[i] < d) one_hot[i * d + device[i]] = 1.0f;
    }
  }
  return FromFloats(one_hot, n, d);
}

}  // namespace

FeatureTensors ToTensors(const GraphFeatures& features) {
  const int64_t n = features.num_nodes;
  const int64_t d = features.num_devices;
  FeatureTensors t;
  t.node = FromFloats(features.node, n, NumNodeFeatures());
  t.device = FromFloats(features.device, d, NumDeviceFeatures());
  t.predecessors = GroupEdges(features.edge_dst, features.edge_src, n);
  t.successors = GroupEdges(features.edge_src, features.edge_dst, n);
  t.allowed = torch::from_blob(const_cast<uint8_t*>(features.allowed.data()),
                               {n, d}, torch::kUInt8)
                  .to(torch::kBool);
  t.work_position =
      torch::from_blob(const_cast<float*>(features.work_position.data()), {n},
                       torch::kFloat32)
          .clone();
  t.upward_rank =
      torch::from_blob(const_cast<float*>(features.upward_rank.data()), {n},
                       torch::kFloat32)
          .clone();
  t.heft_hint = OneHotDevices(features.heft_device, n, d);
  t.metis_hint = OneHotDevices(features.metis_device, n, d);
  return t;
}

FilmImpl::FilmImpl(const FilmOptions& options) : options_(options) {
  projection_ = register_module(
      "projection", nn::Linear(options.condition(), 2 * options.features()));
  torch::NoGradGuard no_grad;
  projection_->weight.zero_();
  projection_->bias.zero_();
}

torch::Tensor FilmImpl::forward(const torch::Tensor& x,
                                const torch::Tensor& g) {
  std::vector<torch::Tensor> gamma_beta =
      projection_->forward(g).squeeze(0).chunk(2);
  return x * (1 + gamma_beta[0]) + gamma_beta[1];
}

SageLayerImpl::SageLayerImpl(const SageLayerOptions& options) {
  message_ = register_module("message",
                             nn::Linear(options.hidden(), options.message()));
  combine_ = register_module(
      "combine",
      nn::Linear(options.hidden() + 4 * options.message(), options.hidden()));
  norm_ = register_module(
      "norm", nn::LayerNorm(nn::LayerNormOptions({options.hidden()})));
  film_ = register_module(
      "film", Film(FilmOptions(options.condition(), options.hidden())));
}

torch::Tensor SageLayerImpl::forward(const torch::Tensor& h,
                                     const FeatureTensors& graph,
                                     const torch::Tensor& g) {
  // Every node's message first: a block aggregates messages from anywhere.
  torch::Tensor m =
      ConcatBlocks(h.size(0), kRowBlock, [&](int64_t begin, int64_t end) {
        return message_->forward(h.slice(0, begin, end));
      });
  return ConcatBlocks(h.size(0), kRowBlock, [&](int64_t begin, int64_t end) {
    torch::Tensor rows = h.slice(0, begin, end);
    torch::Tensor joined =
        torch::cat({rows, Aggregate(m, graph.predecessors, begin, end),
                    Aggregate(m, graph.successors, begin, end)},
                   1);
    torch::Tensor z = torch::relu(combine_->forward(joined));
    return norm_->forward(rows + film_->forward(z, g));
  });
}

SegmentAttentionImpl::SegmentAttentionImpl(
    const SegmentAttentionOptions& options)
    : options_(options) {
  const int64_t h = options.hidden();
  const int64_t a = options.attention_dim();
  query_ = register_module("query", nn::Linear(h, a));
  key_value_ = register_module("key_value", nn::Linear(h, 2 * a));
  output_ = register_module("output", nn::Linear(a, h));
  norm1_ = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({h})));
  ff1_ = register_module("ff1", nn::Linear(h, options.feed_forward()));
  ff2_ = register_module("ff2", nn::Linear(options.feed_forward(), h));
  norm2_ = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({h})));
  film_ = register_module("film", Film(FilmOptions(options.condition(), h)));
}

torch::Tensor SegmentAttentionImpl::forward(const torch::Tensor& x,
                                            const torch::Tensor& g) {
  const int64_t n = x.size(0);
  const int64_t a = options_.attention_dim();
  const int64_t length = options_.segment();
  const int64_t heads = options_.heads();
  const int64_t head_dim = a / heads;
  const int64_t segments = (n + length - 1) / length;
  const int64_t padded = segments * length;
  torch::Tensor position =
      torch::arange(padded, torch::kInt64).view({segments, length});
  torch::Tensor current_valid = position < n;
  torch::Tensor memory_valid = (torch::arange(segments, torch::kInt64) > 0)
                                   .unsqueeze(1)
                                   .expand({segments, length});
  torch::Tensor key_valid = torch::cat({memory_valid, current_valid}, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  torch::Tensor x_padded =
      padded > n
          ? torch::cat({x, torch::zeros({padded - n, x.size(1)}, x.options())},
                       0)
          : x;
  // Each chunk of segments runs the whole layer (attention, then the
  // row-wise output projection, norms and feed-forward) on its own rows.
  torch::Tensor out =
      ConcatBlocks(segments, kSegmentChunk, [&](int64_t begin, int64_t end) {
        const int64_t c = end - begin;
        torch::Tensor rows = x_padded.slice(0, begin * length, end * length);
        torch::Tensor q = query_->forward(rows)
                              .view({c, length, heads, head_dim})
                              .transpose(1, 2);
        torch::Tensor current =
            key_value_->forward(rows).view({c, length, 2 * a});
        // Memory: the previous segment's keys and values, without
        // gradient (the chunk's first segment recomputes its memory from
        // the previous chunk's last rows; the first segment has none).
        torch::Tensor first_memory =
            begin == 0 ? torch::zeros({1, length, 2 * a}, x.options())
                       : key_value_
                             ->forward(x_padded.slice(0, (begin - 1) * length,
                                                      begin * length))
                             .view({1, length, 2 * a});
        torch::Tensor memory =
            torch::cat({first_memory, current.slice(0, 0, c - 1)}, 0).detach();
        torch::Tensor kv = torch::cat({memory, current}, 1);
        std::vector<torch::Tensor> k_v = kv.chunk(2, -1);
        torch::Tensor k =
            k_v[0].reshape({c, 2 * length, heads, head_dim}).transpose(1, 2);
        torch::Tensor v =
            k_v[1].reshape({c, 2 * length, heads, head_dim}).transpose(1, 2);
        torch::Tensor scores = torch::matmul(q * scale, k.transpose(-1, -2));
        // Only the first segment (no memory) and the padded last one have
        // keys to hide; the score tensor is the largest in the network, so
        // the others skip the masking pass.
        if (begin == 0 || (end == segments && padded > n)) {
          torch::Tensor mask = key_valid.slice(0, begin, end)
                                   .logical_not()
                                   .view({c, 1, 1, 2 * length});
          scores.masked_fill_(mask, kMaskedLogit);
        }
        torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), v)
                                     .transpose(1, 2)
                                     .reshape({c * length, a});
        torch::Tensor y = norm1_->forward(rows + output_->forward(attended));
        torch::Tensor ff = ff2_->forward(torch::relu(ff1_->forward(y)));
        return norm2_->forward(y + film_->forward(ff, g));
      });
  return out.slice(0, 0, n);
}

GoNetworkImpl::GoNetworkImpl(const GoNetworkOptions& options)
    : options_(options) {
  const GoModelOptions& m = options.model;
  const int64_t h = m.hidden;
  const int64_t c = m.graph_embedding;
  input_ = register_module("input", nn::Linear(options.node_features, h));
  sage_ = register_module("sage", nn::ModuleList());
  for (int i = 0; i < m.sage_layers; ++i) {
    sage_->push_back(SageLayer(SageLayerOptions(h, m.message, c)));
  }
  device_mlp_ = register_module(
      "device_mlp", nn::Sequential(nn::Linear(options.device_features, h),
                                   nn::ReLU(), nn::Linear(h, h)));
  graph_mlp_ = register_module(
      "graph_mlp",
      nn::Sequential(nn::Linear(2 * h, h), nn::ReLU(), nn::Linear(h, c)));
  auto make_stack = [&](const std::string& name) {
    nn::ModuleList stack;
    for (int i = 0; i < m.attention_layers; ++i) {
      stack->push_back(SegmentAttention(SegmentAttentionOptions(
          h, m.attention_dim, m.heads, m.feed_forward, m.segment, c)));
    }
    return register_module(name, stack);
  };
  placement_stack_ = make_stack("placement_stack");
  scheduling_stack_ = make_stack("scheduling_stack");
  fusion_stack_ = make_stack("fusion_stack");
  placement_query_ = register_module("placement_query", nn::Linear(h, h));
  placement_action_ = register_module("placement_action", nn::Linear(h, h));
  const float strength = m.prior_strength;
  placement_prior_scale_ = register_parameter(
      "placement_prior_scale", torch::full({1}, 0.25f * strength));
  heft_prior_scale_ =
      register_parameter("heft_prior_scale", torch::full({1}, 0.5f * strength));
  metis_prior_scale_ = register_parameter("metis_prior_scale",
                                          torch::full({1}, 6.0f * strength));
  // Zero-initialised: every gate starts at exp(0) = 1.
  placement_prior_gate_ =
      register_module("placement_prior_gate", nn::Linear(c, 3));
  {
    torch::NoGradGuard no_grad;
    placement_prior_gate_->weight.zero_();
    placement_prior_gate_->bias.zero_();
  }
  scheduling_prior_scale_ = register_parameter(
      "scheduling_prior_scale", torch::full({1}, 2.0f * strength));
  fusion_prior_scale_ = register_parameter("fusion_prior_scale",
                                           torch::full({1}, 6.0f * strength));
  scheduling_head_ =
      register_module("scheduling_head", nn::Linear(h, kPriorityLevels));
  scheduling_action_ =
      register_module("scheduling_action", nn::Embedding(kPriorityLevels, h));
  fusion_head_ = register_module("fusion_head", nn::Linear(h, kPriorityLevels));
}

void GoNetworkImpl::ScalePlacementPriors(float factor) {
  torch::NoGradGuard no_grad;
  placement_prior_gate_->weight.zero_();
  placement_prior_gate_->bias.zero_();
  placement_prior_scale_.mul_(factor);
  heft_prior_scale_.mul_(factor);
  metis_prior_scale_.mul_(factor);
}

torch::Tensor GoNetworkImpl::RunStack(nn::ModuleList& stack, torch::Tensor x,
                                      const torch::Tensor& g) {
  for (const std::shared_ptr<nn::Module>& layer : *stack) {
    x = layer->as<SegmentAttention>()->forward(x, g);
  }
  return x;
}

NetworkOutput GoNetworkImpl::forward(const FeatureTensors& graph,
                                     const TaskSet& tasks,
                                     const torch::Tensor& fixed_placement) {
  const int64_t n = graph.node.size(0);
  const int64_t d = graph.device.size(0);
  const double scale = 1.0 / std::sqrt(double(options_.model.hidden));
  // Row-wise work over all nodes, in blocks (see ConcatBlocks).
  auto by_rows = [n](const std::function<torch::Tensor(int64_t, int64_t)>& f) {
    return ConcatBlocks(n, kRowBlock, f);
  };
  torch::Tensor x0 = by_rows([&](int64_t begin, int64_t end) {
    return torch::relu(input_->forward(graph.node.slice(0, begin, end)));
  });
  torch::Tensor devices = device_mlp_->forward(graph.device);
  torch::Tensor g = graph_mlp_->forward(
      torch::cat({x0.mean(0), devices.mean(0)}).unsqueeze(0));
  torch::Tensor x = x0;
  for (const std::shared_ptr<nn::Module>& layer : *sage_) {
    x = layer->as<SageLayer>()->forward(x, graph, g);
  }

  NetworkOutput out;
  torch::Tensor device_actions = placement_action_->forward(devices);
  torch::Tensor previous;  // embedding of the decided tasks' actions
  if (tasks.placement) {
    torch::Tensor y = RunStack(placement_stack_, x, g);
    torch::Tensor centers =
        (torch::arange(d, torch::kFloat32) + 0.5) / static_cast<double>(d);
    torch::Tensor gate = placement_prior_gate_->forward(g).squeeze(0).exp();
    out.placement = by_rows([&](int64_t begin, int64_t end) {
      torch::Tensor logits =
          torch::matmul(placement_query_->forward(y.slice(0, begin, end)),
                        devices.t()) *
          scale;
      if (d > 1) {
        torch::Tensor distance =
            (graph.work_position.slice(0, begin, end).unsqueeze(1) -
             centers.unsqueeze(0)) *
            d;
        logits =
            logits - placement_prior_scale_ * gate[0] * distance * distance +
            heft_prior_scale_ * gate[1] * graph.heft_hint.slice(0, begin, end) +
            metis_prior_scale_ * gate[2] *
                graph.metis_hint.slice(0, begin, end);
      }
      logits = logits.masked_fill(
          graph.allowed.slice(0, begin, end).logical_not(), kMaskedLogit);
      return torch::log_softmax(logits, -1);
    });
    previous = by_rows([&](int64_t begin, int64_t end) {
      return torch::matmul(out.placement.slice(0, begin, end).exp(),
                           device_actions);
    });
  } else {
    torch::Tensor placement = fixed_placement.defined()
                                  ? fixed_placement
                                  : torch::zeros({n}, torch::kInt64);
    previous = device_actions.index_select(0, placement);
  }
  if (tasks.scheduling) {
    torch::Tensor y = RunStack(scheduling_stack_, x + previous, g);
    // Distance in levels between each level and the node's upward rank.
    torch::Tensor levels = torch::arange(kPriorityLevels, torch::kFloat32);
    out.scheduling = by_rows([&](int64_t begin, int64_t end) {
      torch::Tensor distance =
          levels.unsqueeze(0) -
          graph.upward_rank.slice(0, begin, end).unsqueeze(1) *
              (kPriorityLevels - 1);
      return torch::log_softmax(
          scheduling_head_->forward(y.slice(0, begin, end)) -
              scheduling_prior_scale_ * distance * distance,
          -1);
    });
    previous = previous + by_rows([&](int64_t begin, int64_t end) {
                 return torch::matmul(out.scheduling.slice(0, begin, end).exp(),
                                      scheduling_action_->weight);
               });
  }
  if (tasks.fusion) {
    torch::Tensor y = RunStack(fusion_stack_, x + previous, g);
    torch::Tensor eagerness =
        torch::arange(kPriorityLevels, torch::kFloat32) / (kPriorityLevels - 1);
    out.fusion = by_rows([&](int64_t begin, int64_t end) {
      return torch::log_softmax(fusion_head_->forward(y.slice(0, begin, end)) +
                                    fusion_prior_scale_ * eagerness,
                                -1);
    });
  }
  return out;
}

// ---------------------------------------------------------------------------
// GoModel

namespace {

constexpr char kVersionKey[] = "gopt_go_format_version";
constexpr char kArchitectureKey[] = "gopt_go_architecture";
// hidden, sage_layers, attention_layers, heads, feed_forward, segment,
// graph_embedding, node features, device features, seed, attention_dim,
// message.
constexpr int64_t kArchitectureFields = 12;

// Parameter initialisation draws from LibTorch's global generator.
std::mutex& SeedMutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}

absl::Status CheckOptions(const GoModelOptions& o) {
  if (o.hidden <= 0 || o.message <= 0 || o.sage_layers < 0 ||
      o.attention_layers < 0 || o.attention_dim <= 0 || o.heads <= 0 ||
      o.feed_forward <= 0 || o.segment <= 0 || o.graph_embedding <= 0 ||
      o.attention_dim % o.heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad GO architecture: hidden ", o.hidden, ", message ", o.message,
        ", sage_layers ", o.sage_layers, ", attention_layers ",
        o.attention_layers, ", attention_dim ", o.attention_dim, ", heads ",
        o.heads, ", feed_forward ", o.feed_forward, ", segment ", o.segment,
        ", graph_embedding ", o.graph_embedding,
        " (widths must be positive and attention_dim a multiple of heads)"));
  }
  return absl::OkStatus();
}

GoNetwork MakeNetwork(const GoModelOptions& options) {
  std::lock_guard<std::mutex> lock(SeedMutex());
  torch::manual_seed(options.seed);
  GoNetworkOptions network_options;
  network_options.model = options;
  network_options.node_features = NumNodeFeatures();
  network_options.device_features = NumDeviceFeatures();
  GoNetwork network(network_options);
  network->eval();
  return network;
}

torch::Tensor TensorFromInt32s(const std::vector<int32_t>& values) {
  std::vector<int64_t> wide(values.begin(), values.end());
  return torch::tensor(wide, torch::kInt64);
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(),
                            c.data_ptr<float>() + c.numel());
}

}  // namespace

namespace {

// LibTorch hands whole matrix products to BLAS, from the thread that runs
// a block of the network; OpenBLAS's own thread pool on top of LibTorch's
// oversubscribes a small host (measured 2-4x slower on this 2-core
// machine), so BLAS runs on the calling thread. Process-wide, once.
void KeepBlasOnCallingThread() {
  static std::once_flag once;
  std::call_once(once, [] {
    using SetBlasThreads = void (*)(int);
    if (auto set_blas_threads = reinterpret_cast<SetBlasThreads>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
      set_blas_threads(1);
    }
  });
}

}  // namespace

GoModel::GoModel(const GoModelOptions& options, std::unique_ptr<Impl> impl)
    : options_(options), impl_(std::move(impl)) {
  KeepBlasOnCallingThread();
}

GoModel::~GoModel() = default;

absl::StatusOr<std::unique_ptr<GoModel>> GoModel::Create(
    const GoModelOptions& options) {
  absl::Status status = CheckOptions(options);
  if (!status.ok()) return status;
  try {
    return std::unique_ptr<GoModel>(
        new GoModel(options, std::make_unique<Impl>(MakeNetwork(options))));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("creating the GO network: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<std::unique_ptr<GoModel>> GoModel::Load(
    const std::string& path) {
  if (!std::ifstream(path).good()) {
    return absl::NotFoundError(absl::StrCat("GO checkpoint '", path,
                                            "' does not exist or is not "
                                            "readable"));
  }
  const std::string where = absl::StrCat("GO checkpoint '", path, "'");
  try {
    torch::serialize::InputArchive archive;
    try {
      archive.load_from(path);
    } catch (const c10::Error& e) {
      return absl::DataLossError(absl::StrCat(
          where, " is not a LibTorch archive: ", e.what_without_backtrace()));
    }
    torch::Tensor version;
    if (!archive.try_read(kVersionKey, version)) {
      return absl::DataLossError(
          absl::StrCat(where, " has no format version: not a GO checkpoint"));
    }
    if (version.numel() != 1 ||
        version.item<int64_t>() != kCheckpointFormatVersion) {
      return absl::DataLossError(absl::StrCat(
          where, " has format version ",
          version.numel() == 1 ? version.item<int64_t>() : -1,
          "; this build reads version ", kCheckpointFormatVersion));
    }
    torch::Tensor arch;
    if (!archive.try_read(kArchitectureKey, arch) ||
        arch.numel() != kArchitectureFields) {
      return absl::DataLossError(
          absl::StrCat(where, " has no valid architecture record"));
    }
    arch = arch.to(torch::kInt64);
    GoModelOptions options;
    options.hidden = arch[0].item<int64_t>();
    options.sage_layers = arch[1].item<int64_t>();
    options.attention_layers = arch[2].item<int64_t>();
    options.heads = arch[3].item<int64_t>();
    options.feed_forward = arch[4].item<int64_t>();
    options.segment = arch[5].item<int64_t>();
    options.graph_embedding = arch[6].item<int64_t>();
    options.seed = static_cast<uint64_t>(arch[9].item<int64_t>());
    options.attention_dim = arch[10].item<int64_t>();
    options.message = arch[11].item<int64_t>();
    if (arch[7].item<int64_t>() != NumNodeFeatures() ||
        arch[8].item<int64_t>() != NumDeviceFeatures()) {
      return absl::DataLossError(absl::StrCat(
          where, " was trained on ", arch[7].item<int64_t>(), " node and ",
          arch[8].item<int64_t>(), " device features; this build makes ",
          NumNodeFeatures(), " and ", NumDeviceFeatures()));
    }
    absl::Status status = CheckOptions(options);
    if (!status.ok()) {
      return absl::DataLossError(absl::StrCat(where, ": ", status.message()));
    }
    GoNetwork network = MakeNetwork(options);
    // Module::load replaces each tensor with the stored one, whatever its
    // shape: compare shapes so that a mismatched file is an error.
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const auto& item : network->named_parameters()) {
      shapes.emplace_back(item.key(), item.value().sizes().vec());
    }
    try {
      network->load(archive);
    } catch (const c10::Error& e) {
      return absl::DataLossError(absl::StrCat(
          where, " is missing parameters: ", e.what_without_backtrace()));
    }
    size_t i = 0;
    for (const auto& item : network->named_parameters()) {
      if (item.value().sizes().vec() != shapes[i].second) {
        return absl::DataLossError(absl::StrCat(
            where, ": parameter '", item.key(),
            "' has the wrong shape for the recorded architecture"));
      }
      if (!torch::isfinite(item.value()).all().item<bool>()) {
        return absl::DataLossError(absl::StrCat(
            where, ": parameter '", item.key(), "' holds NaN or infinity"));
      }
      ++i;
    }
    network->eval();
    return std::unique_ptr<GoModel>(
        new GoModel(options, std::make_unique<Impl>(std::move(network))));
  } catch (const c10::Error& e) {
    return absl::DataLossError(
        absl::StrCat(where, ": ", e.what_without_backtrace()));
  }
}

absl::Status GoModel::Save(const std::string& path) const {
  try {
    torch::serialize::OutputArchive archive;
    archive.write(kVersionKey, torch::tensor({kCheckpointFormatVersion}));
    archive.write(
        kArchitectureKey,
        torch::tensor(std::vector<int64_t>{
            options_.hidden, options_.sage_layers, options_.attention_layers,
            options_.heads, options_.feed_forward, options_.segment,
            options_.graph_embedding, NumNodeFeatures(), NumDeviceFeatures(),
            static_cast<int64_t>(options_.seed), options_.attention_dim,
            options_.message}));
    impl_->network->save(archive);
    archive.save_to(path);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("writing GO checkpoint '", path,
                                            "': ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::Status GoModel::ScalePlacementPriors(float factor) {
  if (!(factor > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement prior factor must be > 0, got ", factor));
  }
  try {
    impl_->network->ScalePlacementPriors(factor);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("scaling placement priors: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GoModel>> GoModel::Clone() const {
  try {
    GoNetwork copy = MakeNetwork(options_);
    torch::NoGradGuard no_grad;
    auto source = impl_->network->named_parameters();
    auto target = copy->named_parameters();
    for (const auto& item : source) {
      target[item.key()].copy_(item.value());
    }
    return std::unique_ptr<GoModel>(
        new GoModel(options_, std::make_unique<Impl>(std::move(copy))));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("copying the GO network: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<PolicyOutput> GoModel::Run(
    const GraphFeatures& features, const TaskSet& tasks,
    const std::vector<int32_t>* fixed_placement) const {
  if (static_cast<int64_t>(features.node.size()) !=
          static_cast<int64_t>(features.num_nodes) * NumNodeFeatures() ||
      static_cast<int64_t>(features.device.size()) !=
          static_cast<int64_t>(features.num_devices) * NumDeviceFeatures()) {
    return absl::InvalidArgumentError(
        "GO features do not match the network's input widths");
  }
  if (features.edge_src.size() != features.edge_dst.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GO features have ", features.edge_src.size(), " edge sources and ",
        features.edge_dst.size(), " edge destinations"));
  }
  for (size_t e = 0; e < features.edge_src.size(); ++e) {
    const int64_t src = features.edge_src[e];
    const int64_t dst = features.edge_dst[e];
    if (src < 0 || src >= features.num_nodes || dst < 0 ||
        dst >= features.num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("GO features: edge ", e, " (", src, " -> ", dst,
                       ") names a node outside 0..", features.num_nodes - 1));
    }
  }
  if (fixed_placement != nullptr &&
      static_cast<int>(fixed_placement->size()) != features.num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("fixed placement has ", fixed_placement->size(),
                     " entries; the graph has ", features.num_nodes, " nodes"));
  }
  try {
    torch::NoGradGuard no_grad;
    const FeatureTensors tensors = ToTensors(features);
    torch::Tensor placement;
    if (fixed_placement != nullptr) {
      placement = TensorFromInt32s(*fixed_placement);
    }
    NetworkOutput out = impl_->network->forward(tensors, tasks, placement);
    PolicyOutput result;
    result.num_nodes = features.num_nodes;
    result.num_devices = features.num_devices;
    if (out.placement.defined()) result.placement = ToVector(out.placement);
    if (out.scheduling.defined()) result.scheduling = ToVector(out.scheduling);
    if (out.fusion.defined()) result.fusion = ToVector(out.fusion);
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("GO network: ", e.what_without_backtrace()));
  }
}

int64_t GoModel::num_parameters() const {
  int64_t total = 0;
  for (const torch::Tensor& p : impl_->network->parameters()) {
    total += p.numel();
  }
  return total;
}

void SetTorchThreads(int threads) {
  torch::set_num_threads(threads);
  KeepBlasOnCallingThread();
}

void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace gopt::policy::go
