#ifndef GOPT_SIMULATOR_LEARNED_COST_MODEL_H_
#define GOPT_SIMULATOR_LEARNED_COST_MODEL_H_

// The learned runtime model: kernel times learned from measurements on the
// machine (`gopt calibrate --learn`), served through OpCostModel so the
// simulator, the baselines and the plan search use it unchanged.
//
// The model predicts a correction to the calibrated roofline: a small MLP
// over the kernel's features (op kind, the roofline's own prediction, FLOPs,
// bytes, op count, layout factor) gives r, and the kernel takes
// roofline_seconds * exp(r). Where the kernel's op kind was never measured
// (not in the model's known kinds), r = 0: the calibrated roofline prices
// it. Inference is plain C++ (no LibTorch), a few microseconds per kernel;
// the simulator prices every unfused node once per graph and device class.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/op_kind.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// Features of one kernel, in the order the model's first layer reads them:
// one-hot op kind (kNumOpKinds), then the dense features named by
// DenseKernelFeatureNames(). Pure.
inline constexpr int kDenseKernelFeatures = 7;
inline constexpr int kKernelFeatures =
    graph::kNumOpKinds + kDenseKernelFeatures;
std::array<float, kKernelFeatures> KernelFeatures(const KernelWork& work,
                                                  const DeviceProfile& device);
// The same with BaseKernelSeconds(work, device) already known.
std::array<float, kKernelFeatures> KernelFeatures(const KernelWork& work,
                                                  const DeviceProfile& device,
                                                  double base_seconds);
// "log_roofline_s", "log_flops", "log_bytes", ...: the dense features' names
// (the model file lists them; a file with other names is refused).
std::vector<std::string> DenseKernelFeatureNames();

// The roofline a learned model corrects: RooflineCostModel, with the cost
// curve of a single op taken from its kind (so callers that leave op_class
// unset price like the simulator). Pure.
double BaseKernelSeconds(const KernelWork& work, const DeviceProfile& device);

// One dense layer: out = weights * in + bias (weights row-major, rows =
// outputs).
struct DenseLayer {
  int inputs = 0;
  int outputs = 0;
  std::vector<float> weights;
  std::vector<float> bias;
};

// What a model file holds (format "gopt-runtime-model", version 1).
struct RuntimeModelParams {
  // Standardization of the dense features: (x - mean) / scale.
  std::vector<float> dense_mean;
  std::vector<float> dense_scale;
  // Hidden layers use ReLU; the last layer has one output, r.
  std::vector<DenseLayer> layers;
  // Op kinds seen in training (others: r = 0).
  std::vector<graph::OpKind> known_kinds;
  // r is clamped to [min_log_ratio, max_log_ratio] (the range seen in
  // training), so an input far outside the data cannot price a kernel at
  // zero or forever.
  float min_log_ratio = -3;
  float max_log_ratio = 3;
  // Free text carried through (how the model was made: command, data,
  // seed, metrics).
  std::string card_json = "{}";
};

// The params as a model file's JSON text, and back. FromJson errors:
// InvalidArgument naming the field (wrong format or version, feature names
// that differ from DenseKernelFeatureNames(), layer sizes that do not
// chain, an unknown op kind, non-finite numbers).
std::string RuntimeModelToJson(const RuntimeModelParams& params);
absl::StatusOr<RuntimeModelParams> RuntimeModelFromJson(
    const std::string& text);

// The learned runtime model. Thread-safe: its parameters are immutable; a
// cache of predictions (fused kernels recur across the plans of a search,
// and each would otherwise run the MLP) is guarded by a mutex.
class LearnedCostModel final : public OpCostModel {
 public:
  explicit LearnedCostModel(RuntimeModelParams params);

  // Reads a model file. NotFound naming the path; FromJson's errors.
  static absl::StatusOr<std::unique_ptr<LearnedCostModel>> Load(
      const std::string& path);

  double KernelSeconds(const KernelWork& work,
                       const DeviceProfile& device) const override;

  // The model's r for `work` (0 for an unknown kind), before clamping;
  // `base_seconds` is BaseKernelSeconds(work, device).
  double LogRatio(const KernelWork& work, const DeviceProfile& device,
                  double base_seconds) const;

  // Whether kernels of `kind` were measured in training.
  bool Knows(graph::OpKind kind) const {
    return known_[static_cast<int>(kind)] != 0;
  }
  const RuntimeModelParams& params() const { return params_; }
  // A digest of the parameters (hex): plan-store keys include it, so a
  // retrained model under the same file name never serves stale plans.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  // What LogRatio reads of a kernel and its device, bit for bit.
  struct CacheKey {
    double flops, efficiency, peak, bandwidth, base;
    int64_t bytes;
    int32_t num_ops;
    uint8_t kind, dtype;
    bool operator==(const CacheKey& o) const {
      return flops == o.flops && efficiency == o.efficiency && peak == o.peak &&
             bandwidth == o.bandwidth && base == o.base && bytes == o.bytes &&
             num_ops == o.num_ops && kind == o.kind && dtype == o.dtype;
    }
    template <typename H>
    friend H AbslHashValue(H h, const CacheKey& k) {
      return H::combine(std::move(h), k.flops, k.efficiency, k.peak,
                        k.bandwidth, k.base, k.bytes, k.num_ops, k.kind,
                        k.dtype);
    }
  };
  // Most predictions kept; the cache starts over when full.
  static constexpr size_t kMaxCached = 1 << 20;

  RuntimeModelParams params_;
  std::string fingerprint_;
  std::array<uint8_t, graph::kNumOpKinds> known_{};
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<CacheKey, double> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_LEARNED_COST_MODEL_H_
