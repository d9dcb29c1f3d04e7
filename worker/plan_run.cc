#include "worker/plan_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <map>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"
#include "worker/torch_ops.h"

namespace gopt::worker::internal {
namespace {

using graph::Edge;
using graph::NodeId;
using graph::OpKind;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

int64_t TensorBytes(const std::vector<at::Tensor>& tensors) {
  int64_t bytes = 0;
  for (const at::Tensor& t : tensors) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

bool IsResidentKind(OpKind kind) {
  return kind == OpKind::kParameter || kind == OpKind::kConstant;
}

// A quarter of the host's physical memory: the largest tensor a plan may
// hold (a run holds several at once).
int64_t MaxTensorBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 32;
  return static_cast<int64_t>(pages) * page_size / 4;
}

// The message of a caught exception without LibTorch's C++ backtrace
// (c10::Error::what() carries one, with code addresses, which must never
// reach a client).
std::string ErrorText(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    return torch_error->what_without_backtrace();
  }
  return error.what();
}

// Heap key of a ready unit: priority first, then the lower first NodeId.
int64_t RankKey(int32_t priority, NodeId first) {
  return (static_cast<int64_t>(priority) << 32) |
         static_cast<uint32_t>(INT32_MAX - first);
}

// A copy of `t` on `device`: a real copy even between two CPU executors
// (shared memory, but the bytes move as they would between devices).
at::Tensor CopyTo(const at::Tensor& t, const at::Device& device) {
  if (t.device() == device) return t.clone();
  return t.to(device, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

PlanRun::PlanRun(const graph::Graph& graph, const simulator::Plan& plan,
                 RunThreads threads, uint64_t seed, absl::Time deadline,
                 const std::atomic<bool>* cancelled,
                 std::atomic<int64_t>* node_executions)
    : graph_(graph),
      plan_(plan),
      threads_(std::move(threads)),
      num_devices_(static_cast<int>(threads_.devices.size())),
      seed_(seed),
      deadline_(deadline),
      cancelled_(cancelled),
      node_executions_(node_executions) {
  BuildUnits();
  BuildDependencies();
}

void PlanRun::BuildUnits() {
  const int n = graph_.num_nodes();
  unit_of_.assign(n, -1);
  std::map<int32_t, int32_t> unit_of_group;
  for (NodeId id = 0; id < n; ++id) {
    const int32_t group =
        plan_.fusion_group.empty() ? -1 : plan_.fusion_group[id];
    int32_t u;
    auto it = group >= 0 ? unit_of_group.find(group) : unit_of_group.end();
    if (it != unit_of_group.end()) {
      u = it->second;
    } else {
      u = static_cast<int32_t>(units_.size());
      units_.emplace_back();
      units_.back().device = plan_.device[id];
      units_.back().priority = std::numeric_limits<int32_t>::min();
      if (group >= 0) unit_of_group[group] = u;
    }
    unit_of_[id] = u;
    Unit& unit = units_[u];
    unit.nodes.push_back(id);
    unit.priority = std::max(unit.priority,
                             plan_.priority.empty() ? 0 : plan_.priority[id]);
    unit.free = unit.free && graph::IsFreeOpKind(graph_.node(id).kind);
  }
}

void PlanRun::BuildDependencies() {
  const int n = graph_.num_nodes();
  local_units_.assign(n, {});
  remotes_.assign(n, {});
  producers_.assign(n, {});
  local_uses_init_.assign(n, 0);
  remote_uses_init_.assign(static_cast<size_t>(n) * num_devices_, 0);
  sink_.assign(n, 0);
  std::vector<absl::flat_hash_set<NodeId>> unit_inputs(units_.size());
  for (NodeId id = 0; id < n; ++id) {
    sink_[id] = graph_.out_edges(id).empty();
    const int32_t u = unit_of_[id];
    const int32_t device = plan_.device[id];
    absl::flat_hash_set<NodeId> data_producers;
    for (const Edge& e : graph_.in_edges(id)) {
      const NodeId p = e.src;
      if (!e.control && data_producers.insert(p).second) {
        producers_[id].push_back(p);
        if (plan_.device[p] == device) {
          ++local_uses_init_[p];
        } else {
          ++remote_uses_init_[static_cast<size_t>(p) * num_devices_ + device];
        }
      }
      if (unit_of_[p] == u) continue;
      const bool new_input = unit_inputs[u].insert(p).second;
      units_[u].num_inputs += new_input;
      if (plan_.device[p] == device) {
        if (new_input) local_units_[p].push_back(u);
        continue;
      }
      auto it =
          std::find_if(remotes_[p].begin(), remotes_[p].end(),
                       [&](const Remote& r) { return r.device == device; });
      if (it == remotes_[p].end()) {
        remotes_[p].push_back(Remote{device, false, {}});
        it = remotes_[p].end() - 1;
      }
      it->data = it->data || !e.control;
      if (new_input) it->units.push_back(u);
    }
  }
  for (NodeId p = 0; p < n; ++p) {
    for (const Remote& r : remotes_[p]) local_uses_init_[p] += r.data;
  }
}

std::vector<at::Tensor> PlanRun::Inputs(NodeId node, int32_t device) const {
  std::vector<at::Tensor> inputs;
  for (const Edge& e : graph_.in_edges(node)) {
    if (e.control) continue;
    const std::vector<at::Tensor>& values =
        plan_.device[e.src] == device
            ? values_[e.src]
            : remote_[static_cast<size_t>(e.src) * num_devices_ + device];
    if (e.src_output == Edge::kAllOutputs) {
      inputs.insert(inputs.end(), values.begin(), values.end());
    } else {
      TORCH_CHECK(e.src_output < static_cast<int32_t>(values.size()), "node '",
                  graph_.node(node).name, "': input from '",
                  graph_.node(e.src).name, "' output ", e.src_output,
                  " is not there");
      inputs.push_back(values[e.src_output]);
    }
  }
  return inputs;
}

std::vector<at::Tensor> PlanRun::RunNode(
    NodeId node, const std::vector<at::Tensor>& inputs) const {
  if (!resident_[node].empty() || IsResidentKind(graph_.node(node).kind)) {
    return resident_[node];
  }
  if (real_[node]) {
    // Generated values (iota, random, shape-of) come from the host: move
    // them to the node's device.
    const at::Device& device = threads_.torch_devices[plan_.device[node]];
    std::vector<at::Tensor> outputs =
        RunRealOp(graph_, graph_.node(node), inputs);
    for (at::Tensor& t : outputs) {
      if (t.device() != device) t = t.to(device);
    }
    return outputs;
  }
  std::vector<at::Tensor> outputs;
  for (const at::Tensor& t : copy_src_[node]) outputs.push_back(t.clone());
  return outputs;
}

absl::Status PlanRun::Check() const {
  if (cancelled_ != nullptr && cancelled_->load()) {
    return absl::CancelledError("plan execution cancelled");
  }
  if (absl::Now() > deadline_) {
    return absl::DeadlineExceededError(
        "plan execution ran past ExecuteOptions.timeout_seconds");
  }
  return absl::OkStatus();
}

bool PlanRun::StartNode() {
  if (cancelled_ != nullptr && cancelled_->load()) {
    Fail(absl::CancelledError("plan execution cancelled"));
    return false;
  }
  if (node_executions_ != nullptr) node_executions_->fetch_add(1);
  return true;
}

absl::Status PlanRun::SetupNode(
    NodeId id, SetupReport* report,
    std::map<std::string, std::pair<int, std::string>>* copies_by_kind) {
  const graph::Node& node = graph_.node(id);
  const int32_t device = plan_.device[id];
  const at::Device& torch_device = threads_.torch_devices[device];
  try {
    if (IsResidentKind(node.kind)) {
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        resident_[id].push_back(RandomTensor(
            node.outputs[i], seed_ * 1000003 + id * 131 + i, torch_device));
      }
      resident_bytes_[device] += TensorBytes(resident_[id]);
      real_[id] = 1;
      values_[id] = resident_[id];
      return absl::OkStatus();
    }
    std::vector<at::Tensor> inputs;
    for (const Edge& e : graph_.in_edges(id)) {
      if (e.control) continue;
      const std::vector<at::Tensor>& v = values_[e.src];
      if (e.src_output == Edge::kAllOutputs) {
        for (const at::Tensor& t : v) inputs.push_back(t.to(torch_device));
      } else if (e.src_output < static_cast<int32_t>(v.size())) {
        inputs.push_back(v[e.src_output].to(torch_device));
      }
    }
    std::string reason = "no LibTorch op for this kind";
    if (HasRealOp(node.kind)) {
      try {
        values_[id] = RunRealOp(graph_, node, inputs);
        for (at::Tensor& t : values_[id]) t = t.to(torch_device);
        real_[id] = 1;
      } catch (const std::exception& e) {
        reason = ErrorText(e);
      }
      reason = reason.substr(0, 200);
    }
    if (!real_[id]) {
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        copy_src_[id].push_back(RandomTensor(
            node.outputs[i], seed_ * 7919 + id * 131 + i, torch_device));
      }
      resident_bytes_[device] += TensorBytes(copy_src_[id]);
      values_[id] = copy_src_[id];
      auto& entry = (*copies_by_kind)[std::string(OpKindName(node.kind))];
      if (entry.first++ == 0) {
        entry.second =
            absl::StrCat("'", node.name, "' (", node.op, "): ", reason);
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(
        "setting up node '", node.name, "' (", node.op, "): ", ErrorText(e)));
  }
  return absl::OkStatus();
}

absl::Status PlanRun::Setup(SetupReport* report, bool partial) {
  const int n = graph_.num_nodes();
  const int64_t limit = MaxTensorBytes();
  // Per node why it does not run (partial set-ups): the group its warning
  // counts it in (a reason up to its ';') and the whole reason; an empty
  // group = it runs.
  struct NotRun {
    std::string group, reason;
  };
  std::vector<NotRun> not_run(n);
  for (NodeId id = 0; id < n; ++id) {
    for (const graph::TensorType& type : graph_.node(id).outputs) {
      if (type.size_bytes() <= limit) continue;
      const std::string why =
          absl::StrCat("output ", type.ToString(), " needs ", type.size_bytes(),
                       " bytes; this host runs tensors up to ", limit,
                       " bytes (a quarter of its memory)");
      if (!partial) {
        return absl::ResourceExhaustedError(
            absl::StrCat("node '", graph_.node(id).name, "' ", why));
      }
      not_run[id] = {why.substr(0, why.find(';')), why};
    }
  }
  real_.assign(n, 0);
  resident_.assign(n, {});
  copy_src_.assign(n, {});
  resident_bytes_.assign(num_devices_, 0);
  values_.assign(n, {});
  remote_.assign(static_cast<size_t>(n) * num_devices_, {});
  report->node_seconds.assign(n, 0.0);
  std::vector<int32_t> uses(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    for (NodeId p : producers_[id]) ++uses[p];
  }
  std::map<std::string, std::pair<int, std::string>> copies_by_kind;
  std::map<std::string, std::pair<int, std::string>> not_run_by_reason;
  int64_t held_bytes = 0;  // bytes of the values held so far
  for (NodeId id = 0; id < n; ++id) {
    if (absl::Status s = Check(); !s.ok()) {
      if (!partial || absl::IsCancelled(s)) return s;
      if (not_run[id].group.empty()) {
        const std::string message(s.message());
        not_run[id] = {message.substr(0, message.find(';')), message};
      }
    }
    for (NodeId p : producers_[id]) {
      if (not_run[id].group.empty() && !not_run[p].group.empty()) {
        not_run[id] = {
            "an input did not run",
            absl::StrCat("its input '", graph_.node(p).name, "' did not run")};
      }
    }
    if (node_executions_ != nullptr) node_executions_->fetch_add(1);
    // A partial set-up keeps what it holds within half of the host's
    // memory (4 tensor limits): a node that would pass it does not run.
    if (partial && not_run[id].group.empty() &&
        held_bytes + graph_.node(id).output_bytes() > 2 * limit) {
      not_run[id] = {"over half of the memory",
                     absl::StrCat("its output would raise the tensors held to ",
                                  held_bytes + graph_.node(id).output_bytes(),
                                  " bytes, over half of this host's memory (",
                                  2 * limit, ")")};
    }
    if (not_run[id].group.empty()) {
      const auto start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(SetupNode(id, report, &copies_by_kind));
      report->node_seconds[id] = SecondsSince(start);
      // Free ops (reshape, tuple, ...) alias their inputs' storage.
      if (!graph::IsFreeOpKind(graph_.node(id).kind)) {
        held_bytes += TensorBytes(values_[id]);
      }
    } else {
      ++report->not_run_nodes;
      auto& entry = not_run_by_reason[not_run[id].group];
      if (entry.first++ == 0) {
        entry.second =
            absl::StrCat("'", graph_.node(id).name, "' (", graph_.node(id).op,
                         "): ", not_run[id].reason);
      }
    }
    for (NodeId p : producers_[id]) {
      if (--uses[p] == 0 && !sink_[p]) {
        // Weights and copy-mode sources stay held.
        if (resident_[p].empty() && copy_src_[p].empty() &&
            !graph::IsFreeOpKind(graph_.node(p).kind)) {
          held_bytes -= TensorBytes(values_[p]);
        }
        values_[p].clear();
      }
    }
    if (real_[id]) {
      ++report->real_op_nodes;
      report->real_flops += graph_.node(id).flops;
    }
  }
  for (const auto& [kind, entry] : copies_by_kind) {
    report->warnings.push_back(absl::StrCat(entry.first, " ", kind,
                                            " node(s) ran as copies of their "
                                            "bytes; first: ",
                                            entry.second));
  }
  for (const auto& [reason, entry] : not_run_by_reason) {
    report->warnings.push_back(absl::StrCat(entry.first,
                                            " node(s) did not run (", reason,
                                            "); first: ", entry.second));
  }
  return absl::OkStatus();
}

bool PlanRun::Stopping() {
  if (!status_.ok() || units_left_ == 0) return true;
  if (absl::Status s = Check(); !s.ok()) {
    status_ = s;
    return true;
  }
  return false;
}

void PlanRun::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (status_.ok()) status_ = std::move(status);
}

void PlanRun::Ready(int32_t u, std::vector<int32_t>* inline_units) {
  const Unit& unit = units_[u];
  if (unit.free) {
    inline_units->push_back(u);
    return;
  }
  auto& heap = ready_[unit.device];
  heap.emplace_back(RankKey(unit.priority, unit.nodes.front()), u);
  std::push_heap(heap.begin(), heap.end());
}

void PlanRun::Release(NodeId node, int32_t device) {
  if (device == plan_.device[node]) {
    if (--local_uses_[node] > 0 || sink_[node] || !resident_[node].empty()) {
      return;
    }
    live_bytes_[device] -= TensorBytes(values_[node]);
    values_[node].clear();
    return;
  }
  const size_t slot = static_cast<size_t>(node) * num_devices_ + device;
  if (--remote_uses_[slot] > 0) return;
  live_bytes_[device] -= TensorBytes(remote_[slot]);
  remote_[slot].clear();
}

void PlanRun::ExecuteUnit(int32_t first, std::vector<double>* node_s) {
  std::vector<int32_t> work = {first};
  while (!work.empty()) {
    const int32_t u = work.back();
    work.pop_back();
    const Unit& unit = units_[u];
    for (NodeId id : unit.nodes) {
      if (!StartNode()) return;
      const auto start = std::chrono::steady_clock::now();
      try {
        values_[id] = RunNode(id, Inputs(id, unit.device));
        if (node_s != nullptr && threads_.synchronize[unit.device]) {
          threads_.synchronize[unit.device]();
        }
      } catch (const std::exception& e) {
        Fail(absl::InternalError(
            absl::StrCat("running node '", graph_.node(id).name, "' (",
                         graph_.node(id).op, "): ", ErrorText(e))));
        return;
      }
      if (node_s != nullptr) (*node_s)[id] = SecondsSince(start);
    }
    std::vector<int32_t> inline_units;
    absl::MutexLock lock(&mu_);
    const int32_t d = unit.device;
    for (NodeId id : unit.nodes) {
      if (resident_[id].empty()) live_bytes_[d] += TensorBytes(values_[id]);
    }
    peak_bytes_[d] = std::max(peak_bytes_[d], live_bytes_[d]);
    for (NodeId id : unit.nodes) {
      for (NodeId p : producers_[id]) Release(p, d);
      if (local_uses_[id] == 0) {
        ++local_uses_[id];
        Release(id, d);
      }
      for (int32_t v : local_units_[id]) {
        if (--pending_[v] == 0) Ready(v, &inline_units);
      }
      for (const Remote& r : remotes_[id]) {
        if (r.data) {
          link_queue_[d * num_devices_ + r.device].push_back(id);
          continue;
        }
        for (int32_t v : r.units) {
          if (--pending_[v] == 0) Ready(v, &inline_units);
        }
      }
    }
    --units_left_;
    work.insert(work.end(), inline_units.begin(), inline_units.end());
  }
}

void PlanRun::DeviceLoop(int32_t device, std::vector<double>* node_s) {
  auto& heap = ready_[device];
  while (true) {
    int32_t u = -1;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return Stopping() || !heap.empty();
      };
      while (!mu_.AwaitWithTimeout(absl::Condition(&has_work),
                                   absl::Milliseconds(20))) {
      }
      if (Stopping()) break;
      std::pop_heap(heap.begin(), heap.end());
      u = heap.back().second;
      heap.pop_back();
    }
    ExecuteUnit(u, node_s);
  }
  if (threads_.synchronize[device]) threads_.synchronize[device]();
  absl::MutexLock lock(&mu_);
  --loops_running_;
}

void PlanRun::LinkLoop(int32_t src, int32_t dst) {
  auto& queue = link_queue_[src * num_devices_ + dst];
  while (true) {
    NodeId p = -1;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return Stopping() || !queue.empty();
      };
      while (!mu_.AwaitWithTimeout(absl::Condition(&has_work),
                                   absl::Milliseconds(20))) {
      }
      if (Stopping()) break;
      p = queue.front();
      queue.erase(queue.begin());
    }
    std::vector<at::Tensor> copies;
    try {
      for (const at::Tensor& t : values_[p]) {
        copies.push_back(CopyTo(t, threads_.torch_devices[dst]));
      }
    } catch (const std::exception& e) {
      Fail(absl::InternalError(absl::StrCat("copying node '",
                                            graph_.node(p).name, "' to device ",
                                            dst, ": ", ErrorText(e))));
      break;
    }
    std::vector<int32_t> inline_units;
    {
      absl::MutexLock lock(&mu_);
      const size_t slot = static_cast<size_t>(p) * num_devices_ + dst;
      remote_[slot] = std::move(copies);
      live_bytes_[dst] += TensorBytes(remote_[slot]);
      peak_bytes_[dst] = std::max(peak_bytes_[dst], live_bytes_[dst]);
      ++num_copies_;
      bytes_copied_ += TensorBytes(remote_[slot]);
      Release(p, src);
      for (const Remote& r : remotes_[p]) {
        if (r.device != dst) continue;
        for (int32_t v : r.units) {
          if (--pending_[v] == 0) Ready(v, &inline_units);
        }
      }
    }
    for (int32_t u : inline_units) ExecuteUnit(u, nullptr);
  }
  absl::MutexLock lock(&mu_);
  --loops_running_;
}

absl::Status PlanRun::RunOnce(double* step_s, std::vector<double>* node_s) {
  const int n = graph_.num_nodes();
  if (node_s != nullptr) node_s->assign(n, 0.0);
  std::vector<int32_t> inline_units;
  {
    absl::MutexLock lock(&mu_);
    values_.assign(n, {});
    remote_.assign(static_cast<size_t>(n) * num_devices_, {});
    pending_.resize(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) {
      pending_[u] = units_[u].num_inputs;
    }
    local_uses_ = local_uses_init_;
    remote_uses_ = remote_uses_init_;
    ready_.assign(num_devices_, {});
    link_queue_.assign(static_cast<size_t>(num_devices_) * num_devices_, {});
    units_left_ = static_cast<int64_t>(units_.size());
    status_ = absl::OkStatus();
    live_bytes_ = resident_bytes_;
    peak_bytes_ = resident_bytes_;
    num_copies_ = 0;
    bytes_copied_ = 0;
  }
  const auto start = std::chrono::steady_clock::now();
  {
    absl::MutexLock lock(&mu_);
    for (size_t u = 0; u < units_.size(); ++u) {
      if (pending_[u] == 0) Ready(static_cast<int32_t>(u), &inline_units);
    }
  }
  for (int32_t u : inline_units) ExecuteUnit(u, node_s);
  {
    absl::MutexLock lock(&mu_);
    loops_running_ = num_devices_;
    for (TaskThread* link : threads_.links) loops_running_ += link != nullptr;
  }
  for (int32_t d = 0; d < num_devices_; ++d) {
    threads_.devices[d]->Post([this, d, node_s] { DeviceLoop(d, node_s); });
    for (int32_t dst = 0; dst < num_devices_; ++dst) {
      TaskThread* link = threads_.links[d * num_devices_ + dst];
      if (link != nullptr) link->Post([this, d, dst] { LinkLoop(d, dst); });
    }
  }
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return loops_running_ == 0;
  };
  mu_.Await(absl::Condition(&done));
  *step_s = SecondsSince(start);
  if (status_.ok() && units_left_ != 0) {
    return absl::InternalError(absl::StrCat(
        units_left_, " units never became ready (a dependency cycle)"));
  }
  return status_;
}

std::vector<int64_t> PlanRun::PeakMemoryBytes() const {
  absl::MutexLock lock(&mu_);
  return peak_bytes_;
}

std::vector<double> PlanRun::OutputChecksums() const {
  std::vector<double> sums;
  for (NodeId id = 0; id < graph_.num_nodes(); ++id) {
    if (!sink_[id]) continue;
    for (const at::Tensor& t : values_[id]) {
      at::Tensor d =
          at::isComplexType(t.scalar_type()) ? at::view_as_real(t) : t;
      d = at::nan_to_num(d.to(at::kDouble), 0, 0, 0);
      sums.push_back(d.sum().item<double>());
      sums.push_back(d.abs().sum().item<double>());
    }
  }
  return sums;
}

}  // namespace gopt::worker::internal
