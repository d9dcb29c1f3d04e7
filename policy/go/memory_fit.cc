#include "policy/go/memory_fit.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/op_kind.h"
#include "simulator/baselines/cost_table.h"

namespace gopt::policy::go {

using graph::Edge;
using graph::NodeId;

// One walk over a placement: the bytes in use per device now, their peaks,
// and which devices hold a copy of each node's output. Reads the devices of
// nodes already walked from `device` (the caller's vector, updated as the
// walk decides).
class PlacementMemoryFit::Walk {
 public:
  Walk(const PlacementMemoryFit& fit, const std::vector<int32_t>* device)
      : fit_(fit),
        device_(*device),
        used_(fit.num_devices_, 0),
        peak_(fit.num_devices_, 0),
        copies_(fit.graph_.num_nodes(), 0),
        counted_(fit.graph_.num_nodes(), -1) {}

  int64_t used(int32_t d) const { return used_[d]; }
  std::vector<int64_t> TakePeaks() { return std::move(peak_); }

  // Bytes that placing node v on device d adds there: its output (a
  // resident or non-free node's) and a copy of every input produced on
  // another device that d holds no copy of yet.
  int64_t Added(NodeId v, int32_t d) {
    int64_t bytes =
        fit_.free_[v] && !fit_.resident_[v] ? 0 : fit_.output_bytes_[v];
    ++stamp_;
    for (const Edge& e : fit_.graph_.in_edges(v)) {
      if (e.control || counted_[e.src] == stamp_) continue;
      counted_[e.src] = stamp_;
      if (device_[e.src] == d || (copies_[e.src] >> d & 1) != 0) continue;
      bytes += fit_.output_bytes_[e.src];
    }
    return bytes;
  }

  // Places node v on `device_[v]`, then releases what v was the last use
  // of.
  void Commit(NodeId v) {
    const int32_t d = device_[v];
    used_[d] += Added(v, d);
    peak_[d] = std::max(peak_[d], used_[d]);
    for (const Edge& e : fit_.graph_.in_edges(v)) {
      if (!e.control && device_[e.src] != d) copies_[e.src] |= Bit(d);
    }
    for (int32_t i = fit_.release_offsets_[v]; i < fit_.release_offsets_[v + 1];
         ++i) {
      const NodeId u = fit_.release_[i];
      if (!fit_.free_[u] && !fit_.resident_[u]) {
        used_[device_[u]] -= fit_.output_bytes_[u];
      }
      for (int32_t c = 0; c < fit_.num_devices_; ++c) {
        if ((copies_[u] & Bit(c)) != 0) used_[c] -= fit_.output_bytes_[u];
      }
    }
  }

 private:
  static uint64_t Bit(int32_t d) { return uint64_t{1} << d; }

  const PlacementMemoryFit& fit_;
  const std::vector<int32_t>& device_;
  std::vector<int64_t> used_;
  std::vector<int64_t> peak_;
  std::vector<uint64_t> copies_;  // per node: devices holding a copy
  // Per node: the Added call that last counted it, so that an input read
  // through several edges is counted once.
  std::vector<int64_t> counted_;
  int64_t stamp_ = 0;
};

PlacementMemoryFit::PlacementMemoryFit(const graph::Graph& graph,
                                       int num_devices)
    : graph_(graph), num_devices_(num_devices) {
  const int n = graph.num_nodes();
  resident_.resize(n);
  free_.resize(n);
  output_bytes_.resize(n);
  last_use_.assign(n, n);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    // The simulator's rules (Simulator::PackNodes).
    free_[id] = simulator::baselines::IsFreeNode(node);
    resident_[id] = node.kind == graph::OpKind::kParameter ||
                    node.kind == graph::OpKind::kConstant;
    output_bytes_[id] = node.output_bytes();
  }
  // A free consumer aliases its inputs: they live as long as it is used.
  for (NodeId id = n - 1; id >= 0; --id) {
    int32_t last = -1;
    for (const Edge& e : graph.out_edges(id)) {
      if (e.control) continue;
      const bool aliases = free_[e.dst] && !resident_[e.dst];
      last = std::max(last, aliases ? last_use_[e.dst] : e.dst);
    }
    if (last >= 0) last_use_[id] = last;
  }
  release_offsets_.assign(n + 1, 0);
  for (NodeId id = 0; id < n; ++id) {
    if (last_use_[id] < n) ++release_offsets_[last_use_[id] + 1];
  }
  for (int v = 0; v < n; ++v) release_offsets_[v + 1] += release_offsets_[v];
  release_.resize(release_offsets_[n]);
  std::vector<int32_t> fill(release_offsets_.begin(), release_offsets_.end());
  for (NodeId id = 0; id < n; ++id) {
    if (last_use_[id] < n) release_[fill[last_use_[id]]++] = id;
  }
}

absl::Status PlacementMemoryFit::CheckPlacement(
    const std::vector<int32_t>& device) const {
  if (num_devices_ < 1 || num_devices_ > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory fit: ", num_devices_,
                     " devices; expected 1..64 (a topology's limit)"));
  }
  absl::Status status =
      simulator::baselines::CheckPlacement(graph_, num_devices_, device);
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("memory fit: ", status.message()));
}

absl::StatusOr<std::vector<int64_t>> PlacementMemoryFit::EstimatePeakBytes(
    const std::vector<int32_t>& device) const {
  if (absl::Status status = CheckPlacement(device); !status.ok()) {
    return status;
  }
  Walk walk(*this, &device);
  for (NodeId v = 0; v < graph_.num_nodes(); ++v) walk.Commit(v);
  return walk.TakePeaks();
}

absl::StatusOr<PlacementMemoryFit::FitResult> PlacementMemoryFit::Fit(
    const std::vector<int64_t>& budget_bytes,
    const std::vector<uint8_t>& allowed, bool follow_inputs,
    std::vector<int32_t>* device) const {
  if (absl::Status status = CheckPlacement(*device); !status.ok()) {
    return status;
  }
  const size_t cells = static_cast<size_t>(graph_.num_nodes()) * num_devices_;
  if (static_cast<int>(budget_bytes.size()) != num_devices_ ||
      allowed.size() != cells) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory fit: ", budget_bytes.size(), " budgets and ", allowed.size(),
        " allowed entries; expected ", num_devices_, " and ", cells));
  }
  FitResult result;
  Walk walk(*this, device);
  for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
    int32_t& d = (*device)[v];
    if (graph_.node(v).colocation_group >= 0) {
      walk.Commit(v);
      continue;
    }
    const int64_t kept_added = walk.Added(v, d);
    const bool kept_fits = walk.used(d) + kept_added <= budget_bytes[d];
    if (kept_fits && !follow_inputs) {
      walk.Commit(v);
      continue;
    }
    // The devices its consumers were decoded on (not walked yet): copies of
    // its output will go there from anywhere else.
    uint64_t consumers = 0;
    for (const Edge& e : graph_.out_edges(v)) {
      if (!e.control) consumers |= uint64_t{1} << (*device)[e.dst];
    }
    auto moved_bytes = [&](int32_t c, int64_t added) {
      const uint64_t elsewhere = consumers & ~(uint64_t{1} << c);
      return added + output_bytes_[v] * __builtin_popcountll(elsewhere);
    };
    // The decoded device competes when it fits: it wins ties.
    int32_t best = kept_fits ? d : -1;
    int64_t best_moved = moved_bytes(d, kept_added);
    int64_t best_used = walk.used(d) + kept_added;
    for (int32_t c = 0; c < num_devices_; ++c) {
      if (c == d || !allowed[static_cast<size_t>(v) * num_devices_ + c]) {
        continue;
      }
      const int64_t added = walk.Added(v, c);
      const int64_t used = walk.used(c) + added;
      if (used > budget_bytes[c]) continue;
      // Output bytes are the same on every device: the rest is copies.
      const int64_t moved = moved_bytes(c, added);
      if (best < 0 || moved < best_moved ||
          (moved == best_moved && best != d && used < best_used)) {
        best = c;
        best_moved = moved;
        best_used = used;
      }
    }
    if (best >= 0 && best != d) {
      d = best;
      ++result.moved_nodes;
    }
    walk.Commit(v);
  }
  result.peak_bytes = walk.TakePeaks();
  return result;
}

}  // namespace gopt::policy::go
