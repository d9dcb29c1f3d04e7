#include "policy/torch_util.h"

#include <algorithm>

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

}  // namespace gopt::policy
