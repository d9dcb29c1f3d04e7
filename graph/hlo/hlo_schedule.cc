#include "graph/hlo/hlo_schedule.h"

#include <queue>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace gopt::graph {

namespace {

// Topological order of `predecessors` (already deduplicated into
// `users` and `waiting`), the highest `priority` first among the ready
// ones, ties to the lowest index.
std::vector<int> ReadyOrder(const std::vector<std::vector<int>>& users,
                            std::vector<int> waiting,
                            const std::vector<int32_t>& priority) {
  const int n = static_cast<int>(users.size());
  auto priority_of = [&](int i) { return priority.empty() ? 0 : priority[i]; };
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

}  // namespace

std::vector<int> LinearizeSchedule(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<int32_t>& priority, const std::vector<bool>& fixed) {
  const int n = static_cast<int>(predecessors.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  std::vector<absl::flat_hash_set<int>> before(n);
  auto add = [&](int p, int i) {
    if (p < 0 || p >= n || p == i || !before[i].insert(p).second) return;
    users[p].push_back(i);
    ++waiting[i];
  };
  for (int i = 0; i < n; ++i) {
    for (int p : predecessors[i]) add(p, i);
  }
  std::vector<int> stable = ReadyOrder(users, waiting, {});
  if ((priority.empty() && fixed.empty()) ||
      static_cast<int>(stable.size()) != n) {
    return stable;
  }
  // A fixed instruction stays between the instructions before and after it.
  std::vector<int> segment;
  int fence = -1;
  for (int i : stable) {
    if (fence >= 0) add(fence, i);
    if (fixed.empty() || !fixed[i]) {
      segment.push_back(i);
      continue;
    }
    for (int p : segment) add(p, i);
    segment.clear();
    fence = i;
  }
  // Equal priorities keep their stable order: each waits for the one before.
  absl::flat_hash_map<int32_t, int> last;
  for (int i : stable) {
    auto [it, added] = last.try_emplace(priority.empty() ? 0 : priority[i], i);
    if (!added) {
      add(it->second, i);
      it->second = i;
    }
  }
  return ReadyOrder(users, waiting, priority);
}

std::vector<int64_t> ScheduleOfComputation(
    const xla::HloComputationProto& computation,
    const std::vector<int32_t>& priority) {
  const int n = computation.instructions_size();
  absl::flat_hash_map<int64_t, int> index;
  for (int i = 0; i < n; ++i) index[computation.instructions(i).id()] = i;
  std::vector<std::vector<int>> predecessors(n);
  std::vector<bool> fixed(n, false);
  for (int i = 0; i < n; ++i) {
    const xla::HloInstructionProto& instruction = computation.instructions(i);
    fixed[i] = instruction.opcode() == "call";
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
  for (int i : LinearizeSchedule(predecessors, priority, fixed)) {
    order.push_back(computation.instructions(i).id());
  }
  return order;
}

}  // namespace gopt::graph
