#include "simulator/step_time_bound.h"

#include <cmath>

namespace gopt::simulator::internal {
namespace {

// The relative slack of the early stop (see StopAbove).
constexpr double kStopSlack = 1e-9;

}  // namespace

double StepTimeBound::StopAbove(double cutoff_s) {
  return cutoff_s + kStopSlack * std::abs(cutoff_s) + 1e-300;
}

void StepTimeBound::CountWork(Workspace& ws, int32_t num_units,
                              int num_devices) {
  ws.remaining_work.assign(num_devices, 0);
  for (int32_t u = 0; u < num_units; ++u) {
    ws.remaining_work[ws.inputs[u].device] += ws.units[u].duration;
  }
}

}  // namespace gopt::simulator::internal
