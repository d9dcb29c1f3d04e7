#include "graph/import/export_testing.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::graph {

using ::testing::Contains;

gopt::v1::Plan PlanFusing(const Graph& graph,
                          const std::vector<std::string>& fused) {
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    plan.add_device(0);
    plan.add_priority(0);
    plan.add_fusion_group(std::find(fused.begin(), fused.end(),
                                    graph.node(id).name) != fused.end()
                              ? 0
                              : -1);
  }
  return plan;
}

double TotalFlops(const Graph& graph) {
  double flops = 0;
  for (const Node& node : graph.nodes()) flops += node.flops;
  return flops;
}

std::vector<xla::HloInstructionProto> CheckFusedModule(
    const xla::HloModuleProto& module) {
  std::vector<xla::HloInstructionProto> fusions;
  absl::flat_hash_set<int64_t> ids;
  absl::flat_hash_map<int64_t, int> position;  // computation id -> index
  for (int c = 0; c < module.computations_size(); ++c) {
    position[module.computations(c).id()] = c;
  }
  absl::flat_hash_set<int64_t> fused;
  for (int c = 0; c < module.computations_size(); ++c) {
    const auto& computation = module.computations(c);
    for (const auto& instruction : computation.instructions()) {
      EXPECT_TRUE(ids.insert(instruction.id()).second)
          << "id " << instruction.id() << " of " << instruction.name()
          << " is used twice";
      if (instruction.opcode() != "fusion") continue;
      EXPECT_THAT(std::vector<std::string>({"kLoop", "kInput", "kOutput"}),
                  Contains(instruction.fusion_kind()));
      EXPECT_EQ(instruction.called_computation_ids_size(), 1);
      const int64_t callee = instruction.called_computation_ids(0);
      EXPECT_TRUE(fused.insert(callee).second);
      EXPECT_LT(position.at(callee), c) << instruction.name();
      fusions.push_back(instruction);
    }
  }
  for (const auto& computation : module.computations()) {
    auto it = module.schedule().sequences().find(computation.id());
    if (fused.contains(computation.id())) {
      EXPECT_TRUE(it == module.schedule().sequences().end());
      continue;
    }
    EXPECT_TRUE(it != module.schedule().sequences().end())
        << computation.name();
    if (it == module.schedule().sequences().end()) continue;
    EXPECT_EQ(it->second.instruction_ids_size(),
              computation.instructions_size());
    absl::flat_hash_map<int64_t, const xla::HloInstructionProto*> by_id;
    for (const auto& instruction : computation.instructions()) {
      by_id[instruction.id()] = &instruction;
    }
    absl::flat_hash_set<int64_t> done;
    for (int64_t id : it->second.instruction_ids()) {
      EXPECT_TRUE(by_id.contains(id)) << computation.name() << ": " << id;
      if (!by_id.contains(id)) continue;
      for (int64_t operand : by_id[id]->operand_ids()) {
        EXPECT_TRUE(done.contains(operand)) << by_id[id]->name();
      }
      EXPECT_TRUE(done.insert(id).second) << id;
    }
  }
  return fusions;
}

}  // namespace gopt::graph
