#include "graph/hlo/hlo_schedule.h"

#include <queue>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace gopt::graph {

std::vector<int> LinearizeSchedule(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<int32_t>& priority) {
  const int n = static_cast<int>(predecessors.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    absl::flat_hash_set<int> before;
    for (int p : predecessors[i]) {
      if (p < 0 || p >= n || p == i || !before.insert(p).second) continue;
      users[p].push_back(i);
      ++waiting[i];
    }
  }
  auto priority_of = [&](int i) { return priority.empty() ? 0 : priority[i]; };
  // Highest priority first, then the lowest index.
  auto later = [&](int a, int b) {
    return std::make_tuple(-priority_of(a), a) >
           std::make_tuple(-priority_of(b), b);
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (int i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int user : users[i]) {
      if (--waiting[user] == 0) ready.push(user);
    }
  }
  return order;
}

std::vector<int64_t> ScheduleOfComputation(
    const xla::HloComputationProto& computation,
    const std::vector<int32_t>& priority) {
  const int n = computation.instructions_size();
  absl::flat_hash_map<int64_t, int> index;
  for (int i = 0; i < n; ++i) index[computation.instructions(i).id()] = i;
  std::vector<std::vector<int>> predecessors(n);
  for (int i = 0; i < n; ++i) {
    const xla::HloInstructionProto& instruction = computation.instructions(i);
    for (const auto* ids :
         {&instruction.operand_ids(), &instruction.control_predecessor_ids()}) {
      for (int64_t id : *ids) {
        if (auto it = index.find(id); it != index.end()) {
          predecessors[i].push_back(it->second);
        }
      }
    }
  }
  std::vector<int64_t> order;
  order.reserve(n);
  for (int i : LinearizeSchedule(predecessors, priority)) {
    order.push_back(computation.instructions(i).id());
  }
  return order;
}

}  // namespace gopt::graph
