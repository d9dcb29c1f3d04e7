#ifndef GOPT_WORKER_WORKER_PROTO_H_
#define GOPT_WORKER_WORKER_PROTO_H_

#include "gopt/v1/worker.pb.h"
#include "worker/executor.h"

namespace gopt::worker {

// Conversions between the executor's structs and the Worker service's wire
// messages. Pure functions; thread-safe.

// Zero fields keep ExecuteOptions' defaults. The result's `cancelled` is
// null (the caller sets it).
ExecuteOptions ExecuteOptionsFromProto(const gopt::v1::ExecuteOptions& proto);
gopt::v1::ExecuteOptions ExecuteOptionsToProto(const ExecuteOptions& options);

// Every field but run_seconds and output_checksums (not sent); per-node
// times only when `per_node_times`.
gopt::v1::ExecuteResponse ExecutionResultToProto(const ExecutionResult& result,
                                                 bool per_node_times);
ExecutionResult ExecutionResultFromProto(
    const gopt::v1::ExecuteResponse& proto);

// Describe() and HostTopology() of `executor` as a DescribeResponse.
gopt::v1::DescribeResponse DescribeToProto(const Executor& executor);

}  // namespace gopt::worker

#endif  // GOPT_WORKER_WORKER_PROTO_H_
