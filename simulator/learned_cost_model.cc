#include "simulator/learned_cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gopt::simulator {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "gopt-runtime-model";
constexpr int kVersion = 1;

bool AllFinite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](float v) { return std::isfinite(v); });
}

}  // namespace

double BaseKernelSeconds(const KernelWork& work, const DeviceProfile& device) {
  if (work.num_ops == 1 && work.op_class == OpCostClass::kOther) {
    KernelWork single = work;
    single.op_class = OpCostClassOf(work.kind);
    return RooflineSeconds(single, device);
  }
  return RooflineSeconds(work, device);
}

std::vector<std::string> DenseKernelFeatureNames() {
  return {"log_roofline_s", "log_flops",      "log_bytes",    "log_num_ops",
          "efficiency",     "log_peak_flops", "log_bandwidth"};
}

std::array<float, kKernelFeatures> KernelFeatures(const KernelWork& work,
                                                  const DeviceProfile& device) {
  return KernelFeatures(work, device, BaseKernelSeconds(work, device));
}

std::array<float, kKernelFeatures> KernelFeatures(const KernelWork& work,
                                                  const DeviceProfile& device,
                                                  double base_seconds) {
  std::array<float, kKernelFeatures> f{};
  f[static_cast<int>(work.kind)] = 1;
  float* dense = f.data() + graph::kNumOpKinds;
  dense[0] = static_cast<float>(std::log(std::max(1e-9, base_seconds)));
  dense[1] = static_cast<float>(std::log1p(std::max(0.0, work.flops)));
  dense[2] = static_cast<float>(
      std::log1p(static_cast<double>(std::max<int64_t>(0, work.bytes))));
  dense[3] = static_cast<float>(std::log(std::max(1, work.num_ops)));
  dense[4] = static_cast<float>(work.efficiency_factor);
  dense[5] =
      static_cast<float>(std::log(std::max(1.0, device.PeakFlops(work.dtype))));
  dense[6] = static_cast<float>(
      std::log(std::max(1.0, device.memory_bandwidth_bytes_per_s)));
  return f;
}

std::string RuntimeModelToJson(const RuntimeModelParams& params) {
  json out;
  out["format"] = kFormat;
  out["version"] = kVersion;
  out["dense_features"] = DenseKernelFeatureNames();
  out["dense_mean"] = params.dense_mean;
  out["dense_scale"] = params.dense_scale;
  json layers = json::array();
  for (const DenseLayer& layer : params.layers) {
    layers.push_back({{"inputs", layer.inputs},
                      {"outputs", layer.outputs},
                      {"weights", layer.weights},
                      {"bias", layer.bias}});
  }
  out["layers"] = layers;
  json kinds = json::array();
  for (graph::OpKind kind : params.known_kinds) {
    kinds.push_back(std::string(graph::OpKindName(kind)));
  }
  out["known_kinds"] = kinds;
  out["min_log_ratio"] = params.min_log_ratio;
  out["max_log_ratio"] = params.max_log_ratio;
  out["card"] = json::parse(params.card_json, nullptr, false);
  return out.dump(1);
}

absl::StatusOr<RuntimeModelParams> RuntimeModelFromJson(
    const std::string& text) {
  const json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) {
    return absl::InvalidArgumentError("runtime model: not a JSON object");
  }
  if (in.value("format", "") != kFormat || in.value("version", 0) != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime model: expected \"format\":\"", kFormat,
                     "\" and \"version\":", kVersion));
  }
  RuntimeModelParams params;
  try {
    if (in.at("dense_features").get<std::vector<std::string>>() !=
        DenseKernelFeatureNames()) {
      return absl::InvalidArgumentError(
          "runtime model: field dense_features names other features than "
          "this gopt computes (made by another version)");
    }
    params.dense_mean = in.at("dense_mean").get<std::vector<float>>();
    params.dense_scale = in.at("dense_scale").get<std::vector<float>>();
    for (const json& layer : in.at("layers")) {
      DenseLayer l;
      l.inputs = layer.at("inputs").get<int>();
      l.outputs = layer.at("outputs").get<int>();
      l.weights = layer.at("weights").get<std::vector<float>>();
      l.bias = layer.at("bias").get<std::vector<float>>();
      params.layers.push_back(std::move(l));
    }
    for (const json& name : in.at("known_kinds")) {
      const std::optional<graph::OpKind> kind =
          graph::OpKindFromName(name.get<std::string>());
      if (!kind.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("runtime model: field known_kinds: unknown op kind '",
                         name.get<std::string>(), "'"));
      }
      params.known_kinds.push_back(*kind);
    }
    params.min_log_ratio = in.at("min_log_ratio").get<float>();
    params.max_log_ratio = in.at("max_log_ratio").get<float>();
    if (in.contains("card")) params.card_json = in.at("card").dump();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime model: ", e.what()));
  }
  if (params.dense_mean.size() != kDenseKernelFeatures ||
      params.dense_scale.size() != kDenseKernelFeatures) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime model: fields dense_mean and dense_scale need ",
                     kDenseKernelFeatures, " values"));
  }
  int width = kKernelFeatures;
  for (size_t i = 0; i < params.layers.size(); ++i) {
    const DenseLayer& l = params.layers[i];
    if (l.inputs != width || l.outputs < 1 ||
        l.weights.size() != static_cast<size_t>(l.inputs) * l.outputs ||
        l.bias.size() != static_cast<size_t>(l.outputs) ||
        !AllFinite(l.weights) || !AllFinite(l.bias)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "runtime model: field layers[", i, "]: expected ", width,
          " inputs, weights of inputs x outputs and finite numbers"));
    }
    width = l.outputs;
  }
  if (params.layers.empty() || width != 1) {
    return absl::InvalidArgumentError(
        "runtime model: field layers: the last layer must have one output");
  }
  if (!AllFinite(params.dense_mean) || !AllFinite(params.dense_scale) ||
      !std::isfinite(params.min_log_ratio) ||
      !std::isfinite(params.max_log_ratio) ||
      params.min_log_ratio > params.max_log_ratio) {
    return absl::InvalidArgumentError(
        "runtime model: fields dense_mean, dense_scale, min/max_log_ratio "
        "must be finite, min <= max");
  }
  return params;
}

LearnedCostModel::LearnedCostModel(RuntimeModelParams params)
    : params_(std::move(params)) {
  RuntimeModelParams weights_only = params_;
  weights_only.card_json = "{}";
  fingerprint_ = absl::StrCat(
      absl::Hex(std::hash<std::string>()(RuntimeModelToJson(weights_only)),
                absl::kZeroPad16));
  for (graph::OpKind kind : params_.known_kinds) {
    known_[static_cast<int>(kind)] = 1;
  }
}

absl::StatusOr<std::unique_ptr<LearnedCostModel>> LearnedCostModel::Load(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read runtime model '", path, "'"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<RuntimeModelParams> params = RuntimeModelFromJson(text.str());
  if (!params.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", params.status().message()));
  }
  return std::make_unique<LearnedCostModel>(*std::move(params));
}

double LearnedCostModel::LogRatio(const KernelWork& work,
                                  const DeviceProfile& device,
                                  double base_seconds) const {
  if (!Knows(work.kind)) return 0;
  const std::array<float, kKernelFeatures> f =
      KernelFeatures(work, device, base_seconds);
  std::array<float, kKernelFeatures> x = f;
  for (int i = 0; i < kDenseKernelFeatures; ++i) {
    const int j = graph::kNumOpKinds + i;
    const float scale =
        params_.dense_scale[i] != 0 ? params_.dense_scale[i] : 1.0f;
    x[j] = (f[j] - params_.dense_mean[i]) / scale;
  }
  // The first layer reads a one-hot: one column of the kind, then the
  // dense block.
  const DenseLayer& first = params_.layers.front();
  std::vector<float> h(first.bias);
  const int kind = static_cast<int>(work.kind);
  for (int o = 0; o < first.outputs; ++o) {
    const float* row =
        first.weights.data() + static_cast<size_t>(o) * first.inputs;
    float sum = row[kind];
    for (int j = graph::kNumOpKinds; j < kKernelFeatures; ++j) {
      sum += row[j] * x[j];
    }
    h[o] += sum;
  }
  for (size_t l = 1; l < params_.layers.size(); ++l) {
    for (float& v : h) v = std::max(0.0f, v);
    const DenseLayer& layer = params_.layers[l];
    std::vector<float> next(layer.bias);
    for (int o = 0; o < layer.outputs; ++o) {
      const float* row =
          layer.weights.data() + static_cast<size_t>(o) * layer.inputs;
      float sum = 0;
      for (int j = 0; j < layer.inputs; ++j) sum += row[j] * h[j];
      next[o] += sum;
    }
    h = std::move(next);
  }
  return h[0];
}

double LearnedCostModel::KernelSeconds(const KernelWork& work,
                                       const DeviceProfile& device) const {
  const double base = BaseKernelSeconds(work, device);
  if (!Knows(work.kind)) return base;
  const CacheKey key{work.flops,
                     work.efficiency_factor,
                     device.PeakFlops(work.dtype),
                     device.memory_bandwidth_bytes_per_s,
                     base,
                     work.bytes,
                     work.num_ops,
                     static_cast<uint8_t>(work.kind),
                     static_cast<uint8_t>(work.dtype)};
  {
    absl::MutexLock lock(&mu_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  const double r = std::clamp(LogRatio(work, device, base),
                              static_cast<double>(params_.min_log_ratio),
                              static_cast<double>(params_.max_log_ratio));
  const double seconds = base * std::exp(r);
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(key, seconds);
  return seconds;
}

}  // namespace gopt::simulator
