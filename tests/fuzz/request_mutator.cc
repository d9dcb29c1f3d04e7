// Structure-aware mutations for request_fuzzer.cc (libFuzzer builds only).
//
// Byte-level mutation of a protobuf rarely yields a valid message with a
// changed number inside a nested topology (every enclosing length prefix
// must stay right), so half of the mutations parse the input as the
// request it encodes and change one field to a value that tends to break
// arithmetic (inf, NaN, denormals, 0, negatives, huge, INT_MIN...), or
// byte-mutate the graph's serialized bytes inside an intact envelope. The
// other half are libFuzzer's own.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include "gopt/v1/optimizer.pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::minstd_rand;

double InterestingDouble(Rng& rng) {
  constexpr double kValues[] = {
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN(),
      std::numeric_limits<double>::denorm_min(),
      1e-320,
      std::numeric_limits<double>::min(),
      0.0,
      -0.0,
      -1.0,
      1e-300,
      1e-9,
      1.0,
      1e9,
      1e300,
      1e308,
      std::numeric_limits<double>::max(),
  };
  if (rng() % 4 == 0) {
    // A plausible value, scaled by a random power of ten.
    return static_cast<double>(rng() % 1000) *
           std::pow(10.0, static_cast<int>(rng() % 40) - 20);
  }
  return kValues[rng() % std::size(kValues)];
}

int64_t InterestingInt(Rng& rng) {
  constexpr int64_t kValues[] = {
      0,
      1,
      -1,
      2,
      3,
      7,
      255,
      65535,
      1 << 20,
      1LL << 31,
      -(1LL << 31),
      (1LL << 31) - 1,
      1LL << 40,
      1LL << 62,
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(),
  };
  return kValues[rng() % std::size(kValues)];
}

int32_t InterestingInt32(Rng& rng) {
  return static_cast<int32_t>(InterestingInt(rng));
}

void MutateDevice(gopt::v1::DeviceProfile* device, Rng& rng) {
  const double value = InterestingDouble(rng);
  switch (rng() % 9) {
    case 0:
      device->set_peak_f32_flops(value);
      break;
    case 1:
      device->set_peak_f16_flops(value);
      break;
    case 2:
      device->set_peak_f64_flops(value);
      break;
    case 3:
      device->set_peak_int8_ops(value);
      break;
    case 4:
      device->set_memory_bandwidth_bytes_per_s(value);
      break;
    case 5:
      device->set_memory_bytes(InterestingInt(rng));
      break;
    case 6:
      device->set_launch_overhead_s(value);
      break;
    case 7:
      device->set_max_efficiency(value);
      break;
    default: {
      constexpr const char* kKinds[] = {"cpu", "gpu", "tpu", "", "fpga"};
      device->set_kind(kKinds[rng() % std::size(kKinds)]);
      break;
    }
  }
}

void MutateLink(gopt::v1::Link* link, Rng& rng) {
  switch (rng() % 4) {
    case 0:
      link->set_src(InterestingInt32(rng) % 5);
      break;
    case 1:
      link->set_dst(rng() % 2 ? InterestingInt32(rng) : rng() % 4);
      break;
    case 2:
      link->set_bandwidth_bytes_per_s(InterestingDouble(rng));
      break;
    default:
      link->set_latency_s(InterestingDouble(rng));
      break;
  }
}

// A two-device machine to mutate from, for requests that name a preset.
void SetExplicitTopology(gopt::v1::TopologyInput* input, Rng& rng) {
  gopt::v1::Topology* topology = input->mutable_topology();
  topology->set_name("mutated");
  const int devices = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < devices; ++i) {
    gopt::v1::DeviceProfile* device = topology->add_devices();
    device->set_kind("gpu");
    device->set_peak_f32_flops(1.5e13);
    device->set_memory_bandwidth_bytes_per_s(9e11);
    device->set_memory_bytes(int64_t{16} << 30);
    device->set_launch_overhead_s(5e-6);
  }
  topology->mutable_default_link()->set_bandwidth_bytes_per_s(1.6e10);
  topology->mutable_default_link()->set_latency_s(1e-5);
}

void MutateTopology(gopt::v1::TopologyInput* input, Rng& rng) {
  if (!input->has_topology() || rng() % 8 == 0) {
    if (rng() % 3 == 0) {
      constexpr const char* kPresets[] = {"cpu-host",
                                          "v100x2-pcie",
                                          "v100x4-nvlink",
                                          "a100x8-nvlink",
                                          "h100x8-nvlink",
                                          "tpuv3x8",
                                          "",
                                          "nope"};
      input->set_preset(kPresets[rng() % std::size(kPresets)]);
      return;
    }
    SetExplicitTopology(input, rng);
  }
  gopt::v1::Topology* topology = input->mutable_topology();
  const uint32_t choice = rng() % 8;
  if (choice < 4 && topology->devices_size() > 0) {
    MutateDevice(topology->mutable_devices(rng() % topology->devices_size()),
                 rng);
    // Sometimes every device at once (a placer must find no usable device).
    if (rng() % 4 == 0) {
      const gopt::v1::DeviceProfile first = topology->devices(0);
      for (auto& device : *topology->mutable_devices()) device = first;
    }
  } else if (choice < 6) {
    gopt::v1::Link* link =
        rng() % 3 == 0 || topology->links_size() == 0
            ? (rng() % 2 ? topology->add_links()
                         : topology->mutable_default_link())
            : topology->mutable_links(rng() % topology->links_size());
    MutateLink(link, rng);
  } else if (choice == 6 && topology->devices_size() > 0) {
    // Many copies of a device (up to 64).
    const int copies = 1 + static_cast<int>(rng() % 64);
    const gopt::v1::DeviceProfile device = topology->devices(0);
    for (int i = 0; i < copies; ++i) *topology->add_devices() = device;
  } else {
    topology->clear_devices();
  }
}

// Byte-mutates the serialized graph in place, keeping the envelope valid.
void MutateGraph(gopt::v1::GraphInput* graph, size_t max_size, Rng& rng) {
  if (graph->has_graph()) {
    gopt::v1::Graph* native = graph->mutable_graph();
    if (native->nodes_size() == 0) return;
    gopt::v1::Node* node = native->mutable_nodes(rng() % native->nodes_size());
    switch (rng() % 5) {
      case 0:
        node->set_flops(InterestingDouble(rng));
        break;
      case 1:
        node->set_bytes_read(InterestingInt(rng));
        break;
      case 2:
        node->set_bytes_written(InterestingInt(rng));
        break;
      case 3:
        node->set_bytes_communicated(InterestingInt(rng));
        break;
      default:
        native->set_compute_costs(!native->compute_costs());
        break;
    }
    return;
  }
  if (rng() % 8 == 0) {
    constexpr const char* kFormats[] = {
        "",         "auto", "hlo",  "hlo-proto", "onnx",
        "graphdef", "tfjs", "gopt", "tpugraphs", "xyz"};
    graph->set_format(kFormats[rng() % std::size(kFormats)]);
    return;
  }
  std::string* bytes = graph->mutable_serialized();
  if (rng() % 8 == 1) {
    // The hostile classes of the second reliability review at fuzzer
    // scale: a run of empty node elements (under the node field number of
    // one format or another), or JSON opened deeper than any limit.
    constexpr std::string_view kRuns[] = {
        std::string_view("\x0a\x00", 2), std::string_view("\x12\x00", 2),
        std::string_view("\x1a\x00", 2), "[", "{},"};
    const std::string_view run = kRuns[rng() % std::size(kRuns)];
    const size_t room = max_size > bytes->size() ? max_size - bytes->size() : 0;
    std::string runs;
    while (runs.size() + run.size() <= room) runs.append(run);
    bytes->insert(bytes->empty() ? 0 : rng() % bytes->size(), runs);
    return;
  }
  const size_t size = bytes->size();
  if (size == 0) return;
  bytes->resize(std::max(size, std::min(max_size, size + 64)));
  const size_t mutated = LLVMFuzzerMutate(
      reinterpret_cast<uint8_t*>(bytes->data()), size, bytes->size());
  bytes->resize(mutated);
}

void MutateOptions(gopt::v1::OptimizeOptions* options, Rng& rng) {
  switch (rng() % 5) {
    case 0:
      options->set_default_dim(InterestingInt(rng));
      break;
    case 1:
      (*options->mutable_symbolic_dims())[rng() % 2 ? "batch" : "N"] =
          InterestingInt(rng);
      break;
    case 2:
      options->set_seed(rng());
      break;
    default: {
      constexpr const char* kParts[] = {
          "single", "round-robin", "random",  "expert", "metis",
          "heft",   "m-etf",       "m-sct",   "fifo",   "critical-path",
          "none",   "greedy",      "default", "",       "bogus"};
      std::string method = kParts[rng() % std::size(kParts)];
      const int extra = static_cast<int>(rng() % 4);
      for (int i = 0; i < extra; ++i) {
        method += "+";
        method += kParts[rng() % std::size(kParts)];
      }
      options->add_baseline_methods(method);
      break;
    }
  }
}

void MutateOptimize(gopt::v1::OptimizeRequest* request, size_t max_size,
                    Rng& rng) {
  switch (rng() % 10) {
    case 0:
    case 1:
    case 2:
      MutateTopology(request->mutable_topology(), rng);
      break;
    case 3:
    case 4:
      MutateGraph(request->mutable_graph(), max_size, rng);
      break;
    case 5:
    case 6:
      MutateOptions(request->mutable_options(), rng);
      break;
    case 7: {
      gopt::v1::Budget* budget = request->mutable_budget();
      switch (rng() % 3) {
        case 0:
          budget->set_mode(static_cast<gopt::v1::Budget::Mode>(rng() % 5));
          break;
        case 1:
          budget->set_fine_tune_steps(InterestingInt32(rng));
          break;
        default:
          budget->set_seconds(InterestingDouble(rng));
          break;
      }
      break;
    }
    case 8: {
      gopt::v1::Tasks* tasks = request->mutable_tasks();
      tasks->set_placement(rng() % 2);
      tasks->set_scheduling(rng() % 2);
      tasks->set_fusion(rng() % 2);
      tasks->set_layout(rng() % 2);
      break;
    }
    default:
      request->set_allow_partial_result(!request->allow_partial_result());
      break;
  }
}

void MutatePlan(gopt::v1::Plan* plan, Rng& rng) {
  const int n = plan->device_size();
  switch (rng() % 6) {
    case 0:
      if (n > 0)
        plan->set_device(rng() % n,
                         rng() % 2 ? InterestingInt32(rng) : rng() % 8);
      break;
    case 1:
      if (plan->priority_size() > 0) {
        plan->set_priority(rng() % plan->priority_size(),
                           InterestingInt32(rng));
      }
      break;
    case 2:
      if (plan->fusion_group_size() > 0) {
        plan->set_fusion_group(rng() % plan->fusion_group_size(),
                               rng() % 2 ? InterestingInt32(rng) : rng() % 4);
      }
      break;
    case 3: {
      // Layouts for every node: a permutation-ish minor_to_major.
      plan->clear_layout();
      for (int i = 0; i < n; ++i) {
        gopt::v1::TensorLayout* layout = plan->add_layout();
        const int rank = static_cast<int>(rng() % 4);
        for (int d = 0; d < rank; ++d) {
          layout->add_minor_to_major(rng() % 8 == 0 ? InterestingInt32(rng)
                                                    : rank - 1 - d);
        }
      }
      break;
    }
    case 4:
      if (n > 0) {
        plan->mutable_device()->RemoveLast();
      } else {
        plan->add_device(0);
      }
      break;
    default:
      plan->clear_priority();
      plan->clear_fusion_group();
      break;
  }
}

void MutateEvaluate(gopt::v1::EvaluateRequest* request, size_t max_size,
                    Rng& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
      MutateTopology(request->mutable_topology(), rng);
      break;
    case 2:
      MutateGraph(request->mutable_graph(), max_size, rng);
      break;
    case 3:
    case 4:
    case 5:
      MutatePlan(request->mutable_plan(), rng);
      break;
    case 6:
      MutateOptions(request->mutable_options(), rng);
      break;
    default:
      request->set_include_trace(!request->include_trace());
      break;
  }
}

template <typename Request>
size_t MutateRequest(uint8_t* data, size_t size, size_t max_size, Rng& rng,
                     void (*mutate)(Request*, size_t, Rng&)) {
  Request request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  mutate(&request, max_size, rng);
  const std::string bytes = request.SerializeAsString();
  if (bytes.size() + 1 > max_size) return 0;
  std::memcpy(data + 1, bytes.data(), bytes.size());
  return bytes.size() + 1;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  Rng rng(seed);
  if (size > 1 && rng() % 2 == 0) {
    const size_t mutated = (data[0] & 1) != 0
                               ? MutateRequest<gopt::v1::EvaluateRequest>(
                                     data, size, max_size, rng, MutateEvaluate)
                               : MutateRequest<gopt::v1::OptimizeRequest>(
                                     data, size, max_size, rng, MutateOptimize);
    if (mutated > 0) return mutated;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
