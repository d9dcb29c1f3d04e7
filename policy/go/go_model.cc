#include "policy/go/go_model.h"

#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/go/network.h"
#include "policy/torch_checkpoint.h"
#include "policy/torch_util.h"

namespace gopt::policy::go {
namespace {

// The record of format version 2 checkpoints (read, never written): the
// version as a one-element tensor and the architecture as an int64 tensor
// whose fields are kLegacyArchitectureFields, in that order.
constexpr char kLegacyVersionKey[] = "gopt_go_format_version";
constexpr char kLegacyArchitectureKey[] = "gopt_go_architecture";
constexpr int64_t kLegacyFormatVersion = 2;
constexpr const char* kLegacyArchitectureFields[] = {
    "hidden",          "sage_layers", "attention_layers", "heads",
    "feed_forward",    "segment",     "graph_embedding",  "node_features",
    "device_features", "seed",        "attention_dim",    "message"};

// The keys of the header's options JSON: the model's options, and the
// widths of the inputs the network was built for.
constexpr char kModelKey[] = "model";
constexpr char kNodeFeaturesKey[] = "node_features";
constexpr char kDeviceFeaturesKey[] = "device_features";

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
  if (o.co_location_hint_cuts && !o.co_location_head) {
    return absl::InvalidArgumentError(
        "bad GO architecture: co_location_hint_cuts without co_location_head "
        "(the hint inputs belong to the co-location head)");
  }
  return absl::OkStatus();
}

// A freshly initialised network for `options`, drawn from LibTorch's global
// generator under the seed lock (torch_util.h).
GoNetwork MakeNetwork(const GoModelOptions& options) {
  GoNetworkOptions network_options;
  network_options.model = options;
  network_options.node_features = NumNodeFeatures();
  network_options.device_features = NumDeviceFeatures();
  GoNetwork network =
      WithTorchSeed(options.seed, [&] { return GoNetwork(network_options); });
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

// The options JSON of a format version 2 checkpoint: its positional
// architecture tensor turned into the header's named fields.
absl::StatusOr<nlohmann::json> ReadLegacyOptions(
    torch::serialize::InputArchive& archive, const torch::Tensor& version,
    const std::string& where) {
  if (version.numel() != 1 || version.item<int64_t>() != kLegacyFormatVersion) {
    return absl::DataLossError(
        absl::StrCat(where, " has format version ",
                     version.numel() == 1 ? version.item<int64_t>() : -1,
                     "; this build reads versions ", kLegacyFormatVersion,
                     " and ", kCheckpointFormatVersion));
  }
  torch::Tensor arch;
  constexpr int64_t kFields = std::size(kLegacyArchitectureFields);
  if (!archive.try_read(kLegacyArchitectureKey, arch) ||
      arch.numel() != kFields) {
    return absl::DataLossError(
        absl::StrCat(where, " has no valid architecture record"));
  }
  arch = arch.to(torch::kInt64);
  nlohmann::json model = nlohmann::json::object();
  nlohmann::json options = nlohmann::json::object();
  for (int64_t i = 0; i < kFields; ++i) {
    const std::string field = kLegacyArchitectureFields[i];
    const int64_t value = arch[i].item<int64_t>();
    if (field == kNodeFeaturesKey || field == kDeviceFeaturesKey) {
      options[field] = value;
    } else if (field == "seed") {
      model[field] = static_cast<uint64_t>(value);
    } else {
      model[field] = value;
    }
  }
  options[kModelKey] = std::move(model);
  return options;
}

// The model options a checkpoint records (either header layout), checked
// against this build's input widths and CheckOptions. DataLoss naming
// `where` and what is wrong.
absl::StatusOr<GoModelOptions> ReadOptions(
    torch::serialize::InputArchive& archive, const std::string& where) {
  nlohmann::json json;
  if (HasCheckpointHeader(archive)) {
    absl::StatusOr<CheckpointHeader> header = ReadCheckpointHeader(
        archive, kCheckpointFormatVersion, kCheckpointFormatVersion,
        absl::StatusCode::kDataLoss, "GO checkpoint", where);
    if (!header.ok()) return header.status();
    json = std::move(header->options);
  } else {
    torch::Tensor version;
    if (!archive.try_read(kLegacyVersionKey, version)) {
      return absl::DataLossError(
          absl::StrCat(where, " has no format version: not a GO checkpoint"));
    }
    absl::StatusOr<nlohmann::json> legacy =
        ReadLegacyOptions(archive, version, where);
    if (!legacy.ok()) return legacy.status();
    json = *std::move(legacy);
  }
  const auto node = json.find(kNodeFeaturesKey);
  const auto device = json.find(kDeviceFeaturesKey);
  const auto model = json.find(kModelKey);
  if (node == json.end() || !node->is_number_integer() ||
      device == json.end() || !device->is_number_integer() ||
      model == json.end()) {
    return absl::DataLossError(
        absl::StrCat(where, " has no valid architecture record (options ",
                     json.dump(), ")"));
  }
  if (node->get<int64_t>() != NumNodeFeatures() ||
      device->get<int64_t>() != NumDeviceFeatures()) {
    return absl::DataLossError(absl::StrCat(
        where, " was trained on ", node->get<int64_t>(), " node and ",
        device->get<int64_t>(), " device features; this build makes ",
        NumNodeFeatures(), " and ", NumDeviceFeatures()));
  }
  absl::StatusOr<GoModelOptions> options = GoModelOptions::FromJson(*model);
  absl::Status status =
      options.ok() ? CheckOptions(*options) : options.status();
  if (!status.ok()) {
    return absl::DataLossError(absl::StrCat(where, ": ", status.message()));
  }
  return options;
}

// Replaces `network`'s parameters with the archive's. Module::load takes
// each stored tensor whatever its shape: shapes are compared, so that a
// mismatched file is an error, and every value must be finite. DataLoss
// naming `where` and the parameter.
absl::Status LoadParameters(torch::serialize::InputArchive& archive,
                            const std::string& where, GoNetwork* network) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& item : (*network)->named_parameters()) {
    shapes.push_back(item.value().sizes().vec());
  }
  try {
    (*network)->load(archive);
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kDataLoss,
                              absl::StrCat(where, " is missing parameters"));
  }
  size_t i = 0;
  for (const auto& item : (*network)->named_parameters()) {
    if (item.value().sizes().vec() != shapes[i]) {
      return absl::DataLossError(
          absl::StrCat(where, ": parameter '", item.key(),
                       "' has the wrong shape for the recorded architecture"));
    }
    if (!torch::isfinite(item.value()).all().item<bool>()) {
      return absl::DataLossError(absl::StrCat(
          where, ": parameter '", item.key(), "' holds NaN or infinity"));
    }
    ++i;
  }
  return absl::OkStatus();
}

// Reads a number field of `json` into `out` (absent: `out` unchanged when
// `optional`, else an error naming the field).
template <typename T>
absl::Status ReadNumber(const nlohmann::json& json, const char* key,
                        bool optional, T* out) {
  const auto it = json.find(key);
  if (it == json.end()) {
    if (optional) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("GO model options: '", key, "' is missing"));
  }
  if (!it->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GO model options: '", key, "' is not a number"));
  }
  *out = it->get<T>();
  return absl::OkStatus();
}

// InvalidArgument when Run's inputs do not fit the network (GoModel::Run).
absl::Status CheckRunInputs(const GraphFeatures& features,
                            const std::vector<int32_t>* fixed_placement) {
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
  return absl::OkStatus();
}

}  // namespace

nlohmann::json GoModelOptions::ToJson() const {
  return {{"hidden", hidden},
          {"sage_layers", sage_layers},
          {"message", message},
          {"attention_layers", attention_layers},
          {"attention_dim", attention_dim},
          {"heads", heads},
          {"feed_forward", feed_forward},
          {"segment", segment},
          {"graph_embedding", graph_embedding},
          {"prior_strength", prior_strength},
          {"co_location_head", co_location_head},
          {"co_location_hint_cuts", co_location_hint_cuts},
          {"seed", seed}};
}

absl::StatusOr<GoModelOptions> GoModelOptions::FromJson(
    const nlohmann::json& json) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError("GO model options: not a JSON object");
  }
  GoModelOptions o;
  for (const auto& [key, field] :
       {std::pair<const char*, int*>{"hidden", &o.hidden},
        {"sage_layers", &o.sage_layers},
        {"message", &o.message},
        {"attention_layers", &o.attention_layers},
        {"attention_dim", &o.attention_dim},
        {"heads", &o.heads},
        {"feed_forward", &o.feed_forward},
        {"segment", &o.segment},
        {"graph_embedding", &o.graph_embedding}}) {
    if (absl::Status s = ReadNumber(json, key, /*optional=*/false, field);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ReadNumber(json, "seed", /*optional=*/false, &o.seed);
      !s.ok()) {
    return s;
  }
  // Only initialisation; version 2 checkpoints did not record it.
  if (absl::Status s = ReadNumber(json, "prior_strength", /*optional=*/true,
                                  &o.prior_strength);
      !s.ok()) {
    return s;
  }
  // Absent in every checkpoint written before the head (or its hint
  // inputs) existed.
  for (const auto& [key, field] :
       {std::pair<const char*, bool*>{"co_location_head", &o.co_location_head},
        {"co_location_hint_cuts", &o.co_location_hint_cuts}}) {
    const auto it = json.find(key);
    if (it == json.end()) continue;
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GO model options: '", key, "' is not a boolean"));
    }
    *field = it->get<bool>();
  }
  return o;
}

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
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "creating the GO network");
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
      return TorchErrorToStatus(
          e, absl::StatusCode::kDataLoss,
          absl::StrCat(where, " is not a LibTorch archive"));
    }
    absl::StatusOr<GoModelOptions> options = ReadOptions(archive, where);
    if (!options.ok()) return options.status();
    GoNetwork network = MakeNetwork(*options);
    absl::Status status = LoadParameters(archive, where, &network);
    if (!status.ok()) return status;
    network->eval();
    return std::unique_ptr<GoModel>(
        new GoModel(*options, std::make_unique<Impl>(std::move(network))));
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kDataLoss, where);
  }
}

absl::Status GoModel::Save(const std::string& path) const {
  try {
    torch::serialize::OutputArchive archive;
    CheckpointHeader header;
    header.format_version = kCheckpointFormatVersion;
    header.options = {{kModelKey, options_.ToJson()},
                      {kNodeFeaturesKey, NumNodeFeatures()},
                      {kDeviceFeaturesKey, NumDeviceFeatures()}};
    WriteCheckpointHeader(header, &archive);
    impl_->network->save(archive);
    archive.save_to(path);
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(
        e, absl::StatusCode::kInternal,
        absl::StrCat("writing GO checkpoint '", path, "'"));
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
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "scaling placement priors");
  }
  return absl::OkStatus();
}

absl::Status GoModel::DisableHeuristicPriors() {
  try {
    impl_->network->DisableHeuristicPriors();
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "disabling heuristic priors");
  }
  return absl::OkStatus();
}

GoModel::PlacementHints GoModel::PlacementHintsUsed() const {
  return {impl_->network->heft_prior_on(), impl_->network->metis_prior_on()};
}

absl::Status GoModel::EnableCoLocationHead(bool hint_cuts) {
  if (impl_->network->has_co_location_head()) return absl::OkStatus();
  try {
    WithTorchSeed(options_.seed, [&] {
      impl_->network->AddCoLocationHead(hint_cuts);
      return 0;
    });
    impl_->network->eval();
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "adding the co-location head");
  }
  options_.co_location_head = true;
  options_.co_location_hint_cuts = hint_cuts;
  return absl::OkStatus();
}

absl::Status GoModel::CheckAverageDecay(double decay) {
  if (decay >= 0 && decay < 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("weight averaging: decay must be in [0, 1), got ", decay));
}

absl::Status GoModel::AverageToward(const GoModel& model, double decay) {
  absl::Status valid = CheckAverageDecay(decay);
  if (!valid.ok()) return valid;
  try {
    torch::NoGradGuard no_grad;
    auto average = impl_->network->named_parameters();
    auto current = model.impl_->network->named_parameters();
    if (average.size() != current.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight averaging: the networks have ", average.size(),
                       " and ", current.size(), " parameter tensors"));
    }
    for (const auto& item : current) {
      const torch::Tensor* mine = average.find(item.key());
      if (mine == nullptr || !mine->sizes().equals(item.value().sizes())) {
        return absl::InvalidArgumentError(
            absl::StrCat("weight averaging: parameter '", item.key(),
                         "' is missing or of another shape in the average"));
      }
    }
    for (const auto& item : current) {
      average[item.key()].mul_(decay).add_(item.value(), 1.0 - decay);
    }
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "averaging the GO network's weights");
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
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "copying the GO network");
  }
}

absl::StatusOr<PolicyOutput> GoModel::Run(
    const GraphFeatures& features, const TaskSet& tasks,
    const std::vector<int32_t>* fixed_placement) const {
  absl::Status status = CheckRunInputs(features, fixed_placement);
  if (!status.ok()) return status;
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
    if (out.co_location.defined()) {
      result.co_location = ToVector(out.co_location);
    }
    return result;
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal, "GO network");
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
  SetTorchIntraOpThreads(threads);
  KeepBlasOnCallingThread();
}

}  // namespace gopt::policy::go
