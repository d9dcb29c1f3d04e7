#include "worker/worker_proto.h"

#include "simulator/topology.h"
#include "simulator/topology_proto.h"

namespace gopt::worker {

ExecuteOptions ExecuteOptionsFromProto(const gopt::v1::ExecuteOptions& proto) {
  ExecuteOptions options;
  if (proto.warmup_runs() > 0) options.warmup_runs = proto.warmup_runs();
  if (proto.min_repeats() > 0) options.min_repeats = proto.min_repeats();
  if (proto.max_repeats() > 0) options.max_repeats = proto.max_repeats();
  if (proto.min_measure_seconds() > 0) {
    options.min_measure_seconds = proto.min_measure_seconds();
  }
  if (proto.timeout_seconds() > 0) {
    options.timeout_seconds = proto.timeout_seconds();
  }
  if (proto.seed() != 0) options.seed = proto.seed();
  options.per_node_times = proto.per_node_times();
  return options;
}

gopt::v1::ExecuteOptions ExecuteOptionsToProto(const ExecuteOptions& options) {
  gopt::v1::ExecuteOptions proto;
  proto.set_warmup_runs(options.warmup_runs);
  proto.set_min_repeats(options.min_repeats);
  proto.set_max_repeats(options.max_repeats);
  proto.set_min_measure_seconds(options.min_measure_seconds);
  proto.set_timeout_seconds(options.timeout_seconds);
  proto.set_seed(options.seed);
  proto.set_per_node_times(options.per_node_times);
  return proto;
}

gopt::v1::ExecuteResponse ExecutionResultToProto(const ExecutionResult& result,
                                                 bool per_node_times) {
  gopt::v1::ExecuteResponse proto;
  proto.set_measured_step_time_s(result.measured_step_time_s);
  proto.set_measured_spread(result.measured_spread);
  proto.set_measured_min_step_time_s(result.measured_min_step_time_s);
  proto.set_runs(result.runs);
  proto.set_outliers_discarded(result.outliers_discarded);
  if (per_node_times) {
    proto.mutable_per_node_seconds()->Add(result.per_node_seconds.begin(),
                                          result.per_node_seconds.end());
  }
  proto.mutable_peak_memory_bytes()->Add(result.peak_memory_bytes.begin(),
                                         result.peak_memory_bytes.end());
  proto.set_real_op_nodes(result.real_op_nodes);
  proto.set_total_nodes(result.total_nodes);
  proto.set_real_op_flop_fraction(result.real_op_flop_fraction);
  proto.set_fused_groups(result.fused_groups);
  proto.set_fused_groups_run_fused(result.fused_groups_run_fused);
  proto.set_bytes_copied(result.bytes_copied);
  proto.set_num_copies(result.num_copies);
  for (const std::string& warning : result.warnings) {
    proto.add_warnings(warning);
  }
  return proto;
}

ExecutionResult ExecutionResultFromProto(
    const gopt::v1::ExecuteResponse& proto) {
  ExecutionResult result;
  result.measured_step_time_s = proto.measured_step_time_s();
  result.measured_spread = proto.measured_spread();
  result.measured_min_step_time_s = proto.measured_min_step_time_s();
  result.runs = proto.runs();
  result.outliers_discarded = proto.outliers_discarded();
  result.per_node_seconds.assign(proto.per_node_seconds().begin(),
                                 proto.per_node_seconds().end());
  result.peak_memory_bytes.assign(proto.peak_memory_bytes().begin(),
                                  proto.peak_memory_bytes().end());
  result.real_op_nodes = proto.real_op_nodes();
  result.total_nodes = proto.total_nodes();
  result.real_op_flop_fraction = proto.real_op_flop_fraction();
  result.fused_groups = proto.fused_groups();
  result.fused_groups_run_fused = proto.fused_groups_run_fused();
  result.bytes_copied = proto.bytes_copied();
  result.num_copies = proto.num_copies();
  result.warnings.assign(proto.warnings().begin(), proto.warnings().end());
  return result;
}

gopt::v1::DescribeResponse DescribeToProto(const Executor& executor) {
  gopt::v1::DescribeResponse proto;
  for (const DeviceDescription& device : executor.Describe()) {
    gopt::v1::WorkerDevice* out = proto.add_devices();
    out->set_name(device.name);
    out->set_kind(device.kind == simulator::DeviceKind::kCpu ? "cpu" : "gpu");
    out->mutable_cores()->Add(device.cores.begin(), device.cores.end());
    out->set_pinned(device.pinned);
    out->set_threads(device.threads);
    out->set_memory_bytes(device.memory_bytes);
  }
  *proto.mutable_topology() =
      simulator::TopologyToProto(executor.HostTopology());
  proto.set_cuda(ExecutorHasCuda());
  return proto;
}

}  // namespace gopt::worker
