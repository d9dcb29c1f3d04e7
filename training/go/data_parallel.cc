#include "training/go/data_parallel.h"

#include <chrono>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "policy/go/network.h"
#include "policy/torch_util.h"

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace gopt::policy::go {
namespace {

// The variable's value as an int in [min, max]; `fallback` when unset.
absl::StatusOr<int> IntFromEnv(const char* name, int min, int max,
                               int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=\"", text, "\": expected an integer in [", min,
                     ", ", max, "]"));
  }
  return value;
}

// Unavailable for what c10d or Gloo threw while doing `what` (c10::Error
// through TorchErrorToStatus, as everywhere in policy/).
absl::Status CollectiveError(const std::exception& error,
                             const std::string& what) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    return TorchErrorToStatus(*torch_error, absl::StatusCode::kUnavailable,
                              what);
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", error.what()));
}

}  // namespace

absl::StatusOr<DistributedEnv> DistributedEnvFromEnvironment() {
  DistributedEnv env;
  absl::StatusOr<int> world = IntFromEnv("WORLD_SIZE", 1, 1 << 16, 1);
  if (!world.ok()) return world.status();
  env.world_size = *world;
  absl::StatusOr<int> rank = IntFromEnv("RANK", 0, env.world_size - 1, 0);
  if (!rank.ok()) return rank.status();
  env.rank = *rank;
  absl::StatusOr<int> port = IntFromEnv("MASTER_PORT", 1, 65535, 29500);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) {
    env.master_addr = addr;
  }
  if (env.world_size > 1) {
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK"}) {
      const char* value = std::getenv(name);
      if (value == nullptr || *value == '\0') {
        return absl::InvalidArgumentError(absl::StrCat(
            "WORLD_SIZE=", env.world_size, " but ", name, " is not set"));
      }
    }
  }
  return env;
}

class DataParallel::Group {
 public:
  explicit Group(c10::intrusive_ptr<c10d::ProcessGroupGloo> process_group)
      : process_group(std::move(process_group)) {}
  c10::intrusive_ptr<c10d::ProcessGroupGloo> process_group;
};

DataParallel::DataParallel(int rank, int world_size,
                           std::unique_ptr<Group> group)
    : rank_(rank), world_size_(world_size), group_(std::move(group)) {}

DataParallel::~DataParallel() = default;

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Connect(
    const DistributedEnv& env, absl::Duration timeout) {
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", env.rank, " of world size ", env.world_size));
  }
  if (env.world_size == 1) {
    return std::unique_ptr<DataParallel>(new DataParallel(0, 1, nullptr));
  }
  const auto timeout_ms =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0;
    store_options.numWorkers = env.world_size;
    store_options.waitWorkers = true;
    store_options.timeout = timeout_ms;
    auto store =
        c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout_ms);
    const bool loopback =
        env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
    options->devices.push_back(
        loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                 : c10d::ProcessGroupGloo::createDefaultDevice());
    options->threads = 1;
    auto process_group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        store, env.rank, env.world_size, options);
    return std::unique_ptr<DataParallel>(
        new DataParallel(env.rank, env.world_size,
                         std::make_unique<Group>(std::move(process_group))));
  } catch (const std::exception& e) {
    return CollectiveError(
        e, absl::StrCat("joining the process group at ", env.master_addr, ":",
                        env.master_port, " as rank ", env.rank, " of ",
                        env.world_size));
  }
}

absl::Status DataParallel::AverageGradients(GoModel* model) {
  if (group_ == nullptr) return absl::OkStatus();
  try {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat;
    std::vector<torch::Tensor> params = model->impl().network->parameters();
    for (torch::Tensor& p : params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      flat.push_back(p.grad().reshape({-1}));
    }
    std::vector<torch::Tensor> buffer = {torch::cat(flat)};
    group_->process_group->allreduce(buffer)->wait();
    buffer[0].div_(world_size_);
    int64_t offset = 0;
    for (torch::Tensor& p : params) {
      const int64_t n = p.numel();
      p.mutable_grad().copy_(
          buffer[0].slice(0, offset, offset + n).view(p.sizes()));
      offset += n;
    }
  } catch (const std::exception& e) {
    return CollectiveError(e, absl::StrCat("all-reduce of gradients (rank ",
                                           rank_, " of ", world_size_, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> DataParallel::AnyRank(bool value) {
  if (group_ == nullptr) return value;
  try {
    std::vector<torch::Tensor> buffer = {
        torch::full({1}, value ? 1.0f : 0.0f, torch::kFloat32)};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    group_->process_group->allreduce(buffer, options)->wait();
    return buffer[0].item<float>() > 0.5f;
  } catch (const std::exception& e) {
    return CollectiveError(e, absl::StrCat("all-reduce of a flag (rank ", rank_,
                                           " of ", world_size_, ")"));
  }
}

absl::Status DataParallel::BroadcastParameters(GoModel* model) {
  if (group_ == nullptr) return absl::OkStatus();
  try {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> params = model->impl().network->parameters();
    std::vector<torch::Tensor> flat;
    for (torch::Tensor& p : params) flat.push_back(p.detach().reshape({-1}));
    std::vector<torch::Tensor> buffer = {torch::cat(flat)};
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    group_->process_group->broadcast(buffer, options)->wait();
    int64_t offset = 0;
    for (torch::Tensor& p : params) {
      const int64_t n = p.numel();
      p.copy_(buffer[0].slice(0, offset, offset + n).view(p.sizes()));
      offset += n;
    }
  } catch (const std::exception& e) {
    return CollectiveError(e, absl::StrCat("broadcast of parameters (rank ",
                                           rank_, " of ", world_size_, ")"));
  }
  return absl::OkStatus();
}

}  // namespace gopt::policy::go
