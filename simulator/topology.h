#ifndef GOPT_SIMULATOR_TOPOLOGY_H_
#define GOPT_SIMULATOR_TOPOLOGY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"

namespace gopt::simulator {

enum class DeviceKind : uint8_t { kCpu, kGpu, kTpu };

// Classes of ops whose costs `gopt calibrate` fits separately.
enum class OpCostClass : uint8_t {
  kOther = 0,  // no curve of its own: the device's fields
  kDot,
  kConvolution,
  kElementwise,
  kReduction,
  kDataMovement,
};
inline constexpr int kNumOpCostClasses = 6;

// The cost class of an op kind (fused kernels and kinds outside the five
// classes are kOther).
OpCostClass OpCostClassOf(graph::OpKind kind);

// "dot", "convolution", "elementwise", "reduction", "data-movement";
// "other" for kOther.
absl::string_view OpCostClassName(OpCostClass op_class);

// A measured cost curve of one op class on one device (see
// gopt.v1.OpClassCurve). max_efficiency = 0 means "not calibrated".
struct OpClassCurve {
  double max_efficiency = 0;
  double half_efficiency_s = 0;
  double bandwidth_efficiency = 1;
  double launch_overhead_s = 0;

  bool operator==(const OpClassCurve& o) const {
    return max_efficiency == o.max_efficiency &&
           half_efficiency_s == o.half_efficiency_s &&
           bandwidth_efficiency == o.bandwidth_efficiency &&
           launch_overhead_s == o.launch_overhead_s;
  }
};

class LearnedCostModel;

// What the simulator needs to know about one device.
struct DeviceProfile {
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
  double peak_f32_flops = 0;
  double peak_f16_flops = 0;  // f16/bf16 (tensor cores, MXU)
  double peak_f64_flops = 0;
  double peak_int8_ops = 0;
  double memory_bandwidth_bytes_per_s = 0;
  int64_t memory_bytes = 0;
  double launch_overhead_s = 0;
  double max_efficiency = 0.7;  // fraction of peak large kernels reach
  // Calibrated curves by OpCostClass (index); all uncalibrated by default.
  std::array<OpClassCurve, kNumOpCostClasses> op_curves{};
  // Fusion groups run op after op (each member its own kernel, every
  // intermediate through memory) instead of as one fused kernel; see
  // gopt.v1.DeviceProfile. Default false (one fused kernel).
  bool fused_groups_run_op_by_op = false;
  // The learned runtime model that prices this device's kernels
  // (learned_cost_model.h), shared by the devices of a topology loaded
  // with one; null (default): the calibrated roofline.
  std::shared_ptr<const LearnedCostModel> runtime_model;

  // Peak for ops on `dtype` (f16/bf16 and f8 use the f16 peak, f64 the f64
  // peak, 8-bit integers the int8 peak; others f32). Falls back to the f32
  // peak where a class is 0.
  double PeakFlops(graph::DType dtype) const;
};

// A directed link between two devices.
struct Link {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  // Device seconds each transfer takes from the sender when queued and from
  // the receiver when it arrives (gopt.v1.Link.device_overhead_s). Default 0
  // (transfers cost the devices nothing).
  double device_overhead_s = 0;
};

// Devices and the link matrix. A value; thread-safe to read.
struct Topology {
  std::string name;
  std::string source;  // citation of the numbers
  std::vector<DeviceProfile> devices;
  // links[src * num_devices + dst]; the diagonal is unused.
  std::vector<Link> links;
  // gopt.v1.Topology.runtime_model as read (relative to the file); the
  // model itself is on the devices (DeviceProfile::runtime_model).
  std::string runtime_model_path;

  int num_devices() const { return static_cast<int>(devices.size()); }
  const Link& link(int src, int dst) const {
    return links[static_cast<size_t>(src) * devices.size() + dst];
  }
};

// Names of the built-in topologies: cpu-host, v100x2-pcie, v100x4-nvlink,
// a100x8-nvlink, h100x8-nvlink, tpuv3x8.
std::vector<std::string> PresetTopologyNames();

// A built-in topology by name; NotFound listing the names otherwise.
absl::StatusOr<Topology> PresetTopology(absl::string_view name);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_TOPOLOGY_H_
