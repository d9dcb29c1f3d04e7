#include "simulator/trajectory.h"

#include <atomic>
#include <memory>
#include <utility>

namespace gopt::simulator {
namespace internal {

uint64_t NewTrajectoryId() {
  static std::atomic<uint64_t> next_id{1};
  return next_id++;
}

}  // namespace internal

Trajectory::Trajectory(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Trajectory::~Trajectory() = default;
std::unique_ptr<Trajectory::Data> Trajectory::TakeData() {
  return std::move(data_);
}
const Plan& Trajectory::plan() const { return data_->plan; }
const SimulationResult& Trajectory::result() const { return data_->result; }
int Trajectory::num_checkpoints() const {
  return static_cast<int>(data_->checkpoints.size());
}
int64_t Trajectory::num_events() const { return data_->total_events; }

}  // namespace gopt::simulator
