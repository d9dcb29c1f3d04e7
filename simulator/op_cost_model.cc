#include "simulator/op_cost_model.h"

#include <algorithm>

#include "simulator/learned_cost_model.h"

namespace gopt::simulator {

double RooflineSeconds(const KernelWork& work, const DeviceProfile& device) {
  const OpClassCurve& curve = device.op_curves[static_cast<int>(work.op_class)];
  const bool calibrated = curve.max_efficiency > 0;
  double compute_s = 0;
  if (work.flops > 0) {
    const double peak = device.PeakFlops(work.dtype);
    const double half_saturation_flops =
        peak * (calibrated ? curve.half_efficiency_s : 1e-6);
    const double efficiency =
        (calibrated ? curve.max_efficiency : device.max_efficiency) *
        work.efficiency_factor * work.flops /
        (work.flops + half_saturation_flops);
    compute_s = work.flops / (peak * efficiency);
  }
  const double bandwidth = device.memory_bandwidth_bytes_per_s *
                           (calibrated ? curve.bandwidth_efficiency : 1.0);
  const double memory_s = static_cast<double>(work.bytes) / bandwidth;
  return std::max(compute_s, memory_s) +
         (calibrated ? curve.launch_overhead_s : device.launch_overhead_s);
}

}  // namespace gopt::simulator

namespace gopt::simulator {

KernelWork NodeKernelWork(const graph::Node& node) {
  KernelWork work;
  work.flops = node.flops;
  work.bytes = std::max<int64_t>(0, node.bytes_read + node.bytes_written);
  work.dtype = node.outputs.empty() || node.outputs[0].is_tuple()
                   ? graph::DType::kF32
                   : node.outputs[0].dtype;
  work.op_class = OpCostClassOf(node.kind);
  work.kind = node.kind;
  return work;
}

double RooflineCostModel::KernelSeconds(const KernelWork& work,
                                        const DeviceProfile& device) const {
  if (device.runtime_model != nullptr) {
    return device.runtime_model->KernelSeconds(work, device);
  }
  return RooflineSeconds(work, device);
}

}  // namespace gopt::simulator
