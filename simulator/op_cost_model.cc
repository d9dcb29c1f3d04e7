#include "simulator/op_cost_model.h"

#include <algorithm>

namespace gopt::simulator {

double RooflineCostModel::KernelSeconds(const KernelWork& work,
                                        const DeviceProfile& device) const {
  double compute_s = 0;
  if (work.flops > 0) {
    const double peak = device.PeakFlops(work.dtype);
    const double half_saturation_flops = peak * 1e-6;
    const double efficiency = device.max_efficiency * work.efficiency_factor *
                              work.flops / (work.flops + half_saturation_flops);
    compute_s = work.flops / (peak * efficiency);
  }
  const double memory_s =
      static_cast<double>(work.bytes) / device.memory_bandwidth_bytes_per_s;
  return std::max(compute_s, memory_s) + device.launch_overhead_s;
}

}  // namespace gopt::simulator
