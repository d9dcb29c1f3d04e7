#ifndef GOPT_POLICY_TORCH_CHECKPOINT_H_
#define GOPT_POLICY_TORCH_CHECKPOINT_H_

// The versioned header of every learned policy's checkpoint (GO and the
// cost model). Includes LibTorch: only policy/ .cc files include it.

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gopt::policy {

// A checkpoint is a torch::serialize archive holding the model's parameters
// and two header records beside them: "format_version" (an int: the
// layout of the archive, one sequence per model kind) and "options" (the
// model's options as JSON text, by field name), so that Load rebuilds the
// architecture Save wrote. A plain value.
struct CheckpointHeader {
  int64_t format_version = 0;
  nlohmann::json options;
};

// Writes the two header records into `archive`. Throws c10::Error as
// LibTorch does (the caller's Save converts it with TorchErrorToStatus).
void WriteCheckpointHeader(const CheckpointHeader& header,
                           torch::serialize::OutputArchive* archive);

// Whether `archive` holds a "format_version" record (a checkpoint written
// with this header); false for files of older layouts.
bool HasCheckpointHeader(torch::serialize::InputArchive& archive);

// Reads the header of `archive` (the checkpoint of a `what`, e.g. "GO
// model", stored at `where`, e.g. "checkpoint 'x.pt'") and checks that its
// format version is in [oldest_version, newest_version] (the layouts the
// caller reads). Errors have `code` (the loader's
// code for a corrupt file) and name `where`: no or a non-integer format
// version ("is not a <what>"), another version, no options record, options
// that are not JSON. Throws c10::Error only as LibTorch does.
absl::StatusOr<CheckpointHeader> ReadCheckpointHeader(
    torch::serialize::InputArchive& archive, int64_t oldest_version,
    int64_t newest_version, absl::StatusCode code, absl::string_view what,
    absl::string_view where);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_TORCH_CHECKPOINT_H_
