#ifndef GOPT_TRAINING_GO_DATA_PARALLEL_H_
#define GOPT_TRAINING_GO_DATA_PARALLEL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "policy/go/go_model.h"

// Data-parallel training of a GO policy over torch.distributed (c10d, the
// Gloo backend on CPU), for gopt-train only: the server links none of it.
namespace gopt::policy::go {

// Where a rank finds its peers: torchrun's environment variables.
struct DistributedEnv {
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR: rank 0's store host
  int master_port = 29500;                // MASTER_PORT: rank 0's store port
  int world_size = 1;                     // WORLD_SIZE: number of ranks
  int rank = 0;                           // RANK: this process, 0-based
};

// Reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK. With none of them
// set: a single process (world 1, rank 0). Errors: InvalidArgument naming
// the variable for a value that is not a number, out of range (port
// 1..65535, world >= 1, 0 <= rank < world), or when WORLD_SIZE > 1 and a
// variable is missing.
absl::StatusOr<DistributedEnv> DistributedEnvFromEnvironment();

// One rank's membership of a c10d process group (TCPStore rendezvous at
// MASTER_ADDR:MASTER_PORT, served by rank 0; Gloo collectives). Every rank
// must make the same calls in the same order, or the collectives wait until
// `timeout`. Thread-compatible: one thread uses it at a time.
class DataParallel {
 public:
  // Joins the group; blocks until all world_size ranks have joined or
  // `timeout` passes (Unavailable). A world of 1 needs no peers and opens no
  // socket.
  static absl::StatusOr<std::unique_ptr<DataParallel>> Connect(
      const DistributedEnv& env, absl::Duration timeout);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // Replaces every gradient of `model`'s parameters by its mean over the
  // ranks (parameters without a gradient take part as zeros, so all ranks
  // send the same tensors). Unavailable when a peer is gone or times out.
  absl::Status AverageGradients(GoModel* model);

  // True when `value` is true on any rank (e.g. a rank's wall-clock budget
  // ran out, so that all ranks stop at the same step). Unavailable as
  // AverageGradients.
  absl::StatusOr<bool> AnyRank(bool value);

  // Copies rank 0's parameters to every rank (so all start alike).
  // Unavailable as AverageGradients.
  absl::Status BroadcastParameters(GoModel* model);

 private:
  class Group;
  DataParallel(int rank, int world_size, std::unique_ptr<Group> group);

  int rank_;
  int world_size_;
  std::unique_ptr<Group> group_;  // null for a world of 1
};

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_DATA_PARALLEL_H_
