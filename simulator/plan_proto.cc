#include "simulator/plan_proto.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "graph/parse_cost.h"
#include "util/status_macros.h"

namespace gopt::simulator {

gopt::v1::Plan PlanToProto(const Plan& plan) {
  gopt::v1::Plan proto;
  proto.mutable_device()->Add(plan.device.begin(), plan.device.end());
  proto.mutable_priority()->Add(plan.priority.begin(), plan.priority.end());
  proto.mutable_fusion_group()->Add(plan.fusion_group.begin(),
                                    plan.fusion_group.end());
  for (const std::vector<int32_t>& layout : plan.layout) {
    proto.add_layout()->mutable_minor_to_major()->Add(layout.begin(),
                                                      layout.end());
  }
  proto.set_method(plan.method);
  return proto;
}

Plan PlanFromProto(const gopt::v1::Plan& proto) {
  Plan plan;
  plan.device.assign(proto.device().begin(), proto.device().end());
  plan.priority.assign(proto.priority().begin(), proto.priority().end());
  plan.fusion_group.assign(proto.fusion_group().begin(),
                           proto.fusion_group().end());
  for (const gopt::v1::TensorLayout& layout : proto.layout()) {
    plan.layout.emplace_back(layout.minor_to_major().begin(),
                             layout.minor_to_major().end());
  }
  plan.method = proto.method();
  return plan;
}

absl::StatusOr<Plan> LoadPlan(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream contents;
  contents << file.rdbuf();
  // protobuf's JSON reader has no depth limit of its own.
  if (absl::Status nesting =
          graph::JsonParseCost(contents.str(), "", graph::ParseCostLimits())
              .status();
      !nesting.ok()) {
    return Annotate(nesting, path);
  }
  gopt::v1::Plan proto;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(contents.str(), &proto);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": not a gopt.v1.Plan JSON file: ", parsed.message().as_string()));
  }
  return PlanFromProto(proto);
}

}  // namespace gopt::simulator
