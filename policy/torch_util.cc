#include "policy/torch_util.h"

#include <algorithm>
#include <vector>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"

namespace gopt::policy {

absl::Status TorchErrorToStatus(const c10::Error& error, absl::StatusCode code,
                                absl::string_view what) {
  return absl::Status(
      code,
      absl::StrCat(what, ": LibTorch error: ", error.what_without_backtrace()));
}

std::mutex& TorchGlobalStateMutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}

void SetTorchIntraOpThreads(int threads) {
  std::lock_guard<std::mutex> lock(TorchGlobalStateMutex());
  torch::set_num_threads(std::max(threads, 1));
}

torch::Tensor ConcatRowBlocks(
    int64_t count, int64_t grain,
    const std::function<torch::Tensor(int64_t, int64_t)>& block) {
  int64_t blocks = (count + grain - 1) / grain;
  if (blocks > 1 && blocks % 2 == 1) ++blocks;
  std::vector<torch::Tensor> results(blocks);
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      results[b] = block(count * b / blocks, count * (b + 1) / blocks);
    }
  };
  if (torch::GradMode::is_enabled() || blocks < 2) {
    run(0, blocks);
  } else {
    at::parallel_for(0, blocks, /*grain_size=*/1,
                     [&](int64_t first, int64_t last) {
                       // Grad mode is thread-local: the pool's threads
                       // must not record autograd graphs either.
                       torch::NoGradGuard no_grad;
                       run(first, last);
                     });
  }
  return blocks == 1 ? results[0] : torch::cat(results, 0);
}

}  // namespace gopt::policy
