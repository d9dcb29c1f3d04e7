#include "simulator/simulator.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/bounded_run.h"
#include "simulator/candidate_run.h"
#include "simulator/collective_time.h"
#include "simulator/full_run.h"
#include "simulator/lower_bound.h"
#include "simulator/recording_run.h"
#include "simulator/resume_point.h"
#include "simulator/step_time_bound.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace {

using graph::Edge;
using graph::NodeId;
using graph::OpKind;

// Whether two devices cost the same for every kernel: equal in all but the
// name (OpCostModel looks at nothing else).
bool SameProfile(const DeviceProfile& a, const DeviceProfile& b) {
  return a.kind == b.kind && a.peak_f32_flops == b.peak_f32_flops &&
         a.peak_f16_flops == b.peak_f16_flops &&
         a.peak_f64_flops == b.peak_f64_flops &&
         a.peak_int8_ops == b.peak_int8_ops &&
         a.memory_bandwidth_bytes_per_s == b.memory_bandwidth_bytes_per_s &&
         a.memory_bytes == b.memory_bytes &&
         a.launch_overhead_s == b.launch_overhead_s &&
         a.max_efficiency == b.max_efficiency && a.op_curves == b.op_curves &&
         a.fused_groups_run_op_by_op == b.fused_groups_run_op_by_op &&
         a.runtime_model == b.runtime_model;
}

}  // namespace

Simulator::Simulator(const graph::Graph& graph, const Topology& topology,
                     const OpCostModel& cost_model)
    : graph_(graph), topology_(topology), cost_model_(cost_model) {
  PackNodes();
  const LowerBoundTerms bound =
      ComputeLowerBound(graph_, topology_, cost_model_);
  lower_bound_s_ = bound.seconds();
  fits_lower_bound_s_ = bound.fits_in_memory_seconds();
  PriceSoloKernels();
  PackEdges();
  for (const Link& link : topology_.links) {
    if (link.device_overhead_s > 0) link_device_overheads_ = true;
  }
}

// The workspaces are the runs': see internal::ReleaseThreadWorkspaces.
Simulator::~Simulator() { internal::ReleaseThreadWorkspaces(this); }

absl::StatusOr<SimulationResult> Simulator::Simulate(
    const Plan& plan, const SimulationOptions& options) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  return internal::FullRun(*this, plan, options,
                           internal::AcquireThreadWorkspace(
                               this, internal::WorkspaceKind::kFullRuns))
      .Run();
}

absl::StatusOr<std::unique_ptr<Trajectory>> Simulator::Record(
    const Plan& plan, const SimulationOptions& options,
    std::unique_ptr<Trajectory> recycle) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  std::unique_ptr<Trajectory::Data> data;
  if (recycle != nullptr) data = recycle->TakeData();
  if (data == nullptr) data = std::make_unique<Trajectory::Data>();
  internal::RecordingRun run(*this, plan, options,
                             internal::AcquireThreadWorkspace(
                                 this, internal::WorkspaceKind::kFullRuns),
                             *data);
  ASSIGN_OR_RETURN(data->result, run.Run());
  return std::make_unique<Trajectory>(std::move(data));
}

// A candidate resumes from its base when it can (CandidateRun); otherwise
// it runs from the start, stopping early when its kernels are the base's
// and there is a cutoff (BoundedRun), else in full (FullRun).
absl::StatusOr<CandidateResult> Simulator::SimulateCandidate(
    const Trajectory& base, const Plan& plan, const SimulationOptions& options,
    double cutoff_s) const {
  const Trajectory::Data& data = base.data();
  if (data.simulator != this) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SimulateCandidate on graph '", graph_.name(),
        "': the base trajectory was recorded by another simulator"));
  }
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  CandidateResult candidate;
  internal::Workspace& candidate_workspace = internal::AcquireThreadWorkspace(
      this, internal::WorkspaceKind::kCandidateRuns);
  const internal::ResumePoint start =
      internal::ResumePoint::Find(*this, data, plan);
  const double stop_above_s = internal::StepTimeBound::StopAbove(cutoff_s);
  if (start.checkpoint >= 0) {
    RETURN_IF_ERROR(internal::CandidateRun(*this, plan, options,
                                           candidate_workspace, data,
                                           stop_above_s)
                        .Run(start, &candidate));
    return candidate;
  }
  internal::Workspace& workspace = internal::AcquireThreadWorkspace(
      this, internal::WorkspaceKind::kFullRuns);
  if (!start.same_kernels ||
      !(stop_above_s < std::numeric_limits<double>::infinity())) {
    ASSIGN_OR_RETURN(candidate.result,
                     internal::FullRun(*this, plan, options, workspace).Run());
    return candidate;
  }
  RETURN_IF_ERROR(
      internal::BoundedRun(*this, plan, options, workspace, data, stop_above_s)
          .Run(&candidate));
  return candidate;
}

void Simulator::PackNodes() {
  const int n = graph_.num_nodes();
  free_.resize(n);
  resident_.resize(n);
  compute_kind_.resize(n);
  dtype_.resize(n);
  output_bytes_.resize(n);
  flops_.resize(n);
  traffic_bytes_.resize(n);
  written_bytes_.resize(n);
  output_offsets_.reserve(n + 1);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph_.node(id);
    free_[id] = graph::IsFreeOpKind(node.kind) ||
                (node.flops == 0 && node.bytes_read == 0 &&
                 node.bytes_written == 0 && node.bytes_communicated == 0);
    resident_[id] =
        node.kind == OpKind::kParameter || node.kind == OpKind::kConstant;
    compute_kind_[id] =
        node.kind == OpKind::kDot || node.kind == OpKind::kConvolution;
    dtype_[id] = node.outputs.empty() || node.outputs[0].is_tuple()
                     ? graph::DType::kF32
                     : node.outputs[0].dtype;
    output_bytes_[id] = node.output_bytes();
    flops_[id] = node.flops;
    traffic_bytes_[id] = node.bytes_read + node.bytes_written;
    written_bytes_[id] = node.bytes_written;
    output_offsets_.push_back(static_cast<int32_t>(output_sizes_.size()));
    for (const graph::TensorType& output : node.outputs) {
      output_sizes_.push_back(output.size_bytes());
    }
  }
  output_offsets_.push_back(static_cast<int32_t>(output_sizes_.size()));
}

// Kernel seconds of each node run alone with default layouts, per class of
// identical devices (presets repeat one device, so usually one class): most
// plans use no fusion and no layouts, and need no cost-model call.
void Simulator::PriceSoloKernels() {
  const int n = graph_.num_nodes();
  device_class_.resize(topology_.num_devices());
  std::vector<int32_t> class_device;  // a device of each class
  for (int d = 0; d < topology_.num_devices(); ++d) {
    device_class_[d] = static_cast<int32_t>(class_device.size());
    for (size_t c = 0; c < class_device.size(); ++c) {
      if (SameProfile(topology_.devices[class_device[c]],
                      topology_.devices[d])) {
        device_class_[d] = static_cast<int32_t>(c);
        break;
      }
    }
    if (device_class_[d] == static_cast<int32_t>(class_device.size())) {
      class_device.push_back(d);
    }
  }
  num_device_classes_ = static_cast<int>(class_device.size());
  solo_seconds_.assign(static_cast<size_t>(n) * num_device_classes_, 0);
  link_seconds_.assign(n, 0);
  const int64_t group_size = DefaultCollectiveGroupSize(graph_, topology_);
  for (NodeId id = 0; id < n; ++id) {
    if (free_[id]) continue;
    link_seconds_[id] =
        CollectiveLinkSeconds(graph_.node(id), group_size, topology_);
    KernelWork kernel;
    kernel.flops = flops_[id];
    kernel.bytes = std::max<int64_t>(0, traffic_bytes_[id]);
    kernel.dtype = dtype_[id];
    kernel.op_class = OpCostClassOf(graph_.node(id).kind);
    kernel.kind = graph_.node(id).kind;
    for (int c = 0; c < num_device_classes_; ++c) {
      solo_seconds_[static_cast<size_t>(id) * num_device_classes_ + c] =
          cost_model_.KernelSeconds(kernel,
                                    topology_.devices[class_device[c]]) +
          link_seconds_[id];
    }
  }
}

void Simulator::PackEdges() {
  const int n = graph_.num_nodes();
  in_src_.reserve(graph_.num_edges());
  for (const Edge& edge : graph_.edges()) {
    in_src_.push_back(edge.control ? ~edge.src : edge.src);
  }
  out_dst_.reserve(graph_.num_edges());
  out_output_.reserve(graph_.num_edges());
  for (NodeId id = 0; id < n; ++id) {
    for (const Edge& edge : graph_.out_edges(id)) {
      out_dst_.push_back(edge.control ? ~edge.dst : edge.dst);
      out_output_.push_back(edge.src_output);
    }
  }
  // Pair each out-edge with the same edge in in-edge order. Destinations
  // are visited in increasing order and a producer's out-edges are sorted
  // by destination, so the first out-edge of each producer not yet paired
  // (its cursor) starts the run of edges to the current destination.
  in_index_of_out_edge_.assign(graph_.num_edges(), -1);
  if (n == 0) return;
  const Edge* out_base = graph_.out_edges(0).data();
  const Edge* in_base = graph_.edges().data();
  std::vector<int32_t> cursor(n);
  for (NodeId id = 0; id < n; ++id) {
    cursor[id] = static_cast<int32_t>(graph_.out_edges(id).data() - out_base);
  }
  for (NodeId dst = 0; dst < n; ++dst) {
    for (const Edge& edge : graph_.in_edges(dst)) {
      int32_t& first = cursor[edge.src];
      int32_t e = first;
      while (in_index_of_out_edge_[e] >= 0 || !(out_base[e] == edge)) ++e;
      in_index_of_out_edge_[e] = static_cast<int32_t>(&edge - in_base);
      while (first < static_cast<int32_t>(in_index_of_out_edge_.size()) &&
             in_index_of_out_edge_[first] >= 0) {
        ++first;
      }
    }
  }
}

}  // namespace gopt::simulator
