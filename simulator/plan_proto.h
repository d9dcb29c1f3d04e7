#ifndef GOPT_SIMULATOR_PLAN_PROTO_H_
#define GOPT_SIMULATOR_PLAN_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "gopt/v1/plan.pb.h"
#include "simulator/plan.h"

namespace gopt::simulator {

// The edge between the simulator's Plan and gopt.v1.Plan (responses, plan
// JSON files): the simulator itself never sees a proto. Pure functions;
// thread-safe.

// Every field of `plan`, and back.
gopt::v1::Plan PlanToProto(const Plan& plan);
Plan PlanFromProto(const gopt::v1::Plan& proto);

// Reads a plan JSON file (gopt.v1.Plan in the protobuf JSON mapping).
absl::StatusOr<Plan> LoadPlan(const std::string& path);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_PLAN_PROTO_H_
