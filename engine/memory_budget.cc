#include "engine/memory_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::engine {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kKiB = int64_t{1} << 10;

// Per-request peak resident memory above the idle process, measured with
// `gopt optimize` (the same engine, in-process) and /usr/bin/time's max
// RSS on generated GNMT graphs of 11,803 and 84,699 nodes, v100x4-nvlink
// (docs/reliability.md has the table): baselines ~2.5 KiB per node,
// zero-shot GO ~8 KiB, fine-tuning ~70 KiB (the network's activations kept
// for backprop dominate). The figures below leave a margin over those; a
// trace's JSON document is built in memory before it is serialized.
constexpr int64_t kFixedBytes = 16 * kMiB;
constexpr int64_t kBaselineBytesPerNode = 4 * kKiB;
constexpr int64_t kZeroShotBytesPerNode = 12 * kKiB;
constexpr int64_t kFineTuneBytesPerNode = 72 * kKiB;
constexpr int64_t kTraceMemoryBytesPerNode = 8 * kKiB;

std::string MiB(int64_t bytes) {
  return absl::StrCat((bytes + kMiB - 1) / kMiB, " MiB");
}

}  // namespace

MemoryBudget::Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(
    Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

MemoryBudget::Reservation::~Reservation() { Release(); }

void MemoryBudget::Reservation::Release() {
  if (budget_ != nullptr) budget_->Release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

MemoryBudget::MemoryBudget(int64_t budget_bytes)
    : budget_bytes_(std::max<int64_t>(budget_bytes, 1)) {}

absl::StatusOr<MemoryBudget::Reservation> MemoryBudget::Reserve(
    int64_t bytes, absl::string_view what) {
  bytes = std::max<int64_t>(bytes, 0);
  if (bytes > budget_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs an estimated ", MiB(bytes),
        ", more than this server's memory budget of ", MiB(budget_bytes_),
        " (--memory_budget_bytes); send a smaller graph or a cheaper budget "
        "mode"));
  }
  absl::MutexLock lock(&mutex_);
  if (in_use_bytes_ + bytes > budget_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs an estimated ", MiB(bytes), "; ", MiB(in_use_bytes_),
        " of this server's memory budget of ", MiB(budget_bytes_),
        " (--memory_budget_bytes) are held by requests in flight; retry "
        "later"));
  }
  in_use_bytes_ += bytes;
  return Reservation(this, bytes);
}

int64_t MemoryBudget::in_use_bytes() const {
  absl::MutexLock lock(&mutex_);
  return in_use_bytes_;
}

void MemoryBudget::Release(int64_t bytes) {
  absl::MutexLock lock(&mutex_);
  in_use_bytes_ -= bytes;
}

int64_t EstimateRequestBytes(int64_t nodes, RequestWork work, bool trace) {
  nodes = std::max<int64_t>(nodes, 0);
  int64_t per_node = kBaselineBytesPerNode;
  if (work == RequestWork::kZeroShot) per_node = kZeroShotBytesPerNode;
  if (work == RequestWork::kFineTune) per_node = kFineTuneBytesPerNode;
  if (trace) per_node += kTraceMemoryBytesPerNode;
  return kFixedBytes + nodes * per_node;
}

}  // namespace gopt::engine
