#ifndef GOPT_SIMULATOR_OP_COST_MODEL_H_
#define GOPT_SIMULATOR_OP_COST_MODEL_H_

#include <cstdint>

#include "graph/graph.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// The work of one kernel: a single op, or a fused group of ops.
struct KernelWork {
  double flops = 0;
  int64_t bytes = 0;                        // bytes moved to/from device memory
  graph::DType dtype = graph::DType::kF32;  // decides which peak applies
  // Multiplies the achievable efficiency (layout quality; 1 = ideal).
  double efficiency_factor = 1.0;
  // Which calibrated curve applies (kOther: the device's own fields; fused
  // kernels are kOther).
  OpCostClass op_class = OpCostClass::kOther;
  // The kernel's op (a fused kernel: its member with the most FLOPs) and
  // how many ops it runs; the learned runtime model reads them, the
  // roofline does not.
  graph::OpKind kind = graph::OpKind::kOther;
  int32_t num_ops = 1;
};

// Predicts how long a kernel takes on a device. Implementations are
// stateless and thread-safe (the simulator calls them from parallel
// rollouts).
class OpCostModel {
 public:
  virtual ~OpCostModel() = default;
  OpCostModel(const OpCostModel&) = delete;
  OpCostModel& operator=(const OpCostModel&) = delete;

  // Seconds for `work` on `device`, launch overhead included. Depends on
  // the device's numbers and kind only, never its name (the simulator
  // prices devices with equal numbers once).
  virtual double KernelSeconds(const KernelWork& work,
                               const DeviceProfile& device) const = 0;

 protected:
  OpCostModel() = default;
};

// The kernel `node` runs alone, as the simulator prices an unfused node:
// its FLOPs, bytes read + written, output dtype (f32 for tuples), cost class
// and kind. Pure.
KernelWork NodeKernelWork(const graph::Node& node);

// The roofline law below, for `work` on `device` (what RooflineCostModel
// gives on a device without a runtime model). Pure.
double RooflineSeconds(const KernelWork& work, const DeviceProfile& device);

// The analytical roofline:
//   max(flops / (peak(dtype) * efficiency), bytes / bandwidth) + launch,
// where efficiency = max_efficiency * factor * flops / (flops + peak * 1 us):
// a kernel whose ideal run is 1 us reaches half the achievable efficiency,
// as small kernels cannot fill the device. Where the device has a
// calibrated curve for the kernel's op class (`gopt calibrate`), the
// curve's efficiency, half-efficiency time, bandwidth fraction and launch
// overhead replace those defaults. A device with a learned runtime model
// (DeviceProfile::runtime_model, from a topology file `gopt calibrate
// --learn` wrote) is priced by that model instead, which corrects this law
// by what it measured (and falls back to it for op kinds it never saw).
class RooflineCostModel final : public OpCostModel {
 public:
  RooflineCostModel() = default;
  double KernelSeconds(const KernelWork& work,
                       const DeviceProfile& device) const override;
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_OP_COST_MODEL_H_
