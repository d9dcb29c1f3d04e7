#include "simulator/full_run.h"

#include "util/status_macros.h"

namespace gopt::simulator::internal {

absl::StatusOr<SimulationResult> FullRun::Run() {
  loop_.SetUp();
  loop_.Start(*this);
  loop_.Run(*this);
  RETURN_IF_ERROR(loop_.CheckAllCompleted());
  return loop_.Finish();
}

}  // namespace gopt::simulator::internal
