#ifndef GOPT_POLICY_TORCH_UTIL_H_
#define GOPT_POLICY_TORCH_UTIL_H_

// LibTorch plumbing shared by the learned policies (policy/go,
// policy/cost_model). Includes LibTorch: only their .cc files include it.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gopt::policy {

// The Status for a LibTorch exception caught while doing `what`:
// "<what>: LibTorch error: <message without the C++ backtrace>", with
// `code` (Internal for a failed computation, DataLoss for a checkpoint that
// cannot be read, ...). Every catch of c10::Error in policy/ goes through
// it, so that no exception crosses a module boundary and the messages read
// alike. Thread-safe.
//
// Example:
//   try { ... } catch (const c10::Error& e) {
//     return TorchErrorToStatus(e, absl::StatusCode::kInternal, "GO network");
//   }
absl::Status TorchErrorToStatus(const c10::Error& error, absl::StatusCode code,
                                absl::string_view what);

// The lock over LibTorch's process-wide state that results depend on: its
// default random generator (torch::manual_seed, parameter initialisation)
// and its intra-op thread count. Held only while that state is set and
// used (initialising parameters), never during a forward pass.
std::mutex& TorchGlobalStateMutex();

// Seeds LibTorch's default generator with `seed` and runs `init` (which
// draws from it, e.g. constructs a module) under TorchGlobalStateMutex, so
// that two threads creating models at once each get their seed's
// parameters. Returns what `init` returns; exceptions from `init` pass
// through (the caller catches c10::Error).
//
// Example:
//   GoNetwork network = WithTorchSeed(options.seed, [&] {
//     return GoNetwork(network_options);
//   });
template <typename Init>
auto WithTorchSeed(uint64_t seed, Init&& init) {
  std::lock_guard<std::mutex> lock(TorchGlobalStateMutex());
  torch::manual_seed(seed);
  return std::forward<Init>(init)();
}

// Sets LibTorch's intra-op thread count (process-wide) under
// TorchGlobalStateMutex. For main() and for training runs that own the
// process; threads <= 0 is taken as 1.
void SetTorchIntraOpThreads(int threads);

// Evaluates `block(begin, end)` over [0, count) split into near-equal
// ranges of at most `grain` items and concatenates the results along
// dimension 0, so that the temporaries of one block (attention scores above
// all) stay small. The split depends only on `count` and `grain`, so the
// result does not depend on the thread count; it is even (when there is
// more than one block) so that two threads get equal shares. Without
// gradient (inference) the blocks are shared among LibTorch's intra-op
// threads, each block running its operators on one thread: a few large
// tasks per layer instead of a parallel region per small operator. With
// gradient (training) they run in order on the calling thread. `block` must
// be safe to call from several threads at once without gradient; its
// exceptions pass through.
torch::Tensor ConcatRowBlocks(
    int64_t count, int64_t grain,
    const std::function<torch::Tensor(int64_t, int64_t)>& block);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_TORCH_UTIL_H_
