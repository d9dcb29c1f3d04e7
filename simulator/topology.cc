#include "simulator/topology.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::simulator {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

DeviceProfile V100Sxm2() {
  // NVIDIA Tesla V100 datasheet (SXM2 16 GB): 15.7 TFLOP/s FP32, 125 TFLOP/s
  // tensor (FP16), 7.8 TFLOP/s FP64, 900 GB/s HBM2, 16 GB.
  DeviceProfile d;
  d.name = "V100-SXM2-16GB";
  d.kind = DeviceKind::kGpu;
  d.peak_f32_flops = 15.7e12;
  d.peak_f16_flops = 125e12;
  d.peak_f64_flops = 7.8e12;
  d.peak_int8_ops = 62.8e12;  // DP4A: 4x FP32 rate
  d.memory_bandwidth_bytes_per_s = 900e9;
  d.memory_bytes = static_cast<int64_t>(16 * kGiB);
  // A framework-level kernel launch on CUDA costs ~5 us (launch + runtime).
  d.launch_overhead_s = 5e-6;
  return d;
}

DeviceProfile V100Pcie() {
  // NVIDIA Tesla V100 datasheet (PCIe 16 GB): 14 TFLOP/s FP32, 112 TFLOP/s
  // tensor, 7 TFLOP/s FP64, 900 GB/s, 16 GB.
  DeviceProfile d = V100Sxm2();
  d.name = "V100-PCIe-16GB";
  d.peak_f32_flops = 14e12;
  d.peak_f16_flops = 112e12;
  d.peak_f64_flops = 7e12;
  d.peak_int8_ops = 56e12;
  return d;
}

DeviceProfile A100Sxm4() {
  // NVIDIA A100 datasheet (SXM4 80 GB): 19.5 TFLOP/s FP32, 312 TFLOP/s
  // FP16/BF16 tensor (dense), 19.5 TFLOP/s FP64 tensor, 624 TOPS INT8,
  // 2,039 GB/s HBM2e, 80 GB.
  DeviceProfile d;
  d.name = "A100-SXM4-80GB";
  d.kind = DeviceKind::kGpu;
  d.peak_f32_flops = 19.5e12;
  d.peak_f16_flops = 312e12;
  d.peak_f64_flops = 19.5e12;
  d.peak_int8_ops = 624e12;
  d.memory_bandwidth_bytes_per_s = 2039e9;
  d.memory_bytes = static_cast<int64_t>(80 * kGiB);
  d.launch_overhead_s = 5e-6;
  return d;
}

DeviceProfile H100Sxm5() {
  // NVIDIA H100 datasheet (SXM5 80 GB): 67 TFLOP/s FP32, 989 TFLOP/s
  // FP16/BF16 tensor (dense), 67 TFLOP/s FP64 tensor, 1,979 TOPS INT8
  // (dense), 3.35 TB/s HBM3, 80 GB.
  DeviceProfile d;
  d.name = "H100-SXM5-80GB";
  d.kind = DeviceKind::kGpu;
  d.peak_f32_flops = 67e12;
  d.peak_f16_flops = 989e12;
  d.peak_f64_flops = 67e12;
  d.peak_int8_ops = 1979e12;
  d.memory_bandwidth_bytes_per_s = 3.35e12;
  d.memory_bytes = static_cast<int64_t>(80 * kGiB);
  d.launch_overhead_s = 4e-6;
  return d;
}

DeviceProfile TpuV3Core() {
  // Google Cloud TPU v3 system architecture docs: a v3 chip has 2 cores,
  // 123 TFLOP/s bf16 and 32 GiB HBM at 900 GB/s; one core gets half of each.
  // f32 matmuls run as multi-pass bf16 on the MXU (~1/3 rate, our estimate).
  DeviceProfile d;
  d.name = "TPUv3-core";
  d.kind = DeviceKind::kTpu;
  d.peak_f16_flops = 61.5e12;
  d.peak_f32_flops = 20.5e12;
  d.peak_f64_flops = 0;  // falls back to f32 (emulated)
  d.peak_int8_ops = 61.5e12;
  d.memory_bandwidth_bytes_per_s = 450e9;
  d.memory_bytes = static_cast<int64_t>(16 * kGiB);
  d.launch_overhead_s = 2e-6;
  return d;
}

DeviceProfile CpuHostCore() {
  // This build machine: 2 cores. DESIGN.md measures ~180 GFLOP/s f32 matmul
  // on both cores with OpenBLAS, so ~90 GFLOP/s per core; ~10 GB/s of DRAM
  // bandwidth per core and half of the 24 GiB each (our measurements'
  // order of magnitude, to be replaced by the worker pool's calibration).
  DeviceProfile d;
  d.name = "cpu-core";
  d.kind = DeviceKind::kCpu;
  d.peak_f32_flops = 90e9;
  d.peak_f16_flops = 0;  // no fast f16 on this CPU: falls back to f32
  d.peak_f64_flops = 45e9;
  d.peak_int8_ops = 0;
  d.memory_bandwidth_bytes_per_s = 10e9;
  d.memory_bytes = static_cast<int64_t>(12 * kGiB);
  d.launch_overhead_s = 1e-6;
  d.max_efficiency = 0.8;
  return d;
}

Topology Uniform(std::string name, std::string source, DeviceProfile device,
                 int count, Link link) {
  Topology t;
  t.name = std::move(name);
  t.source = std::move(source);
  for (int i = 0; i < count; ++i) {
    t.devices.push_back(device);
    t.devices.back().name = absl::StrCat(device.name, ":", i);
  }
  t.links.assign(static_cast<size_t>(count) * count, link);
  return t;
}

}  // namespace

double DeviceProfile::PeakFlops(graph::DType dtype) const {
  double peak = peak_f32_flops;
  switch (dtype) {
    case graph::DType::kF16:
    case graph::DType::kBF16:
    case graph::DType::kF8E4M3FN:
    case graph::DType::kF8E5M2:
      peak = peak_f16_flops;
      break;
    case graph::DType::kF64:
    case graph::DType::kC128:
      peak = peak_f64_flops;
      break;
    case graph::DType::kS8:
    case graph::DType::kU8:
    case graph::DType::kS4:
    case graph::DType::kU4:
      peak = peak_int8_ops;
      break;
    default:
      break;
  }
  return peak > 0 ? peak : peak_f32_flops;
}

std::vector<std::string> PresetTopologyNames() {
  return {"cpu-host",      "v100x2-pcie",   "v100x4-nvlink",
          "a100x8-nvlink", "h100x8-nvlink", "tpuv3x8"};
}

OpCostClass OpCostClassOf(graph::OpKind kind) {
  switch (kind) {
    case graph::OpKind::kDot:
      return OpCostClass::kDot;
    case graph::OpKind::kConvolution:
      return OpCostClass::kConvolution;
    default:
      break;
  }
  switch (graph::OpKindCategory(kind)) {
    case graph::OpCategory::kElementwise:
      return OpCostClass::kElementwise;
    case graph::OpCategory::kReduction:
      return OpCostClass::kReduction;
    case graph::OpCategory::kDataMovement:
      return OpCostClass::kDataMovement;
    default:
      return OpCostClass::kOther;
  }
}

absl::string_view OpCostClassName(OpCostClass op_class) {
  switch (op_class) {
    case OpCostClass::kDot:
      return "dot";
    case OpCostClass::kConvolution:
      return "convolution";
    case OpCostClass::kElementwise:
      return "elementwise";
    case OpCostClass::kReduction:
      return "reduction";
    case OpCostClass::kDataMovement:
      return "data-movement";
    case OpCostClass::kOther:
      break;
  }
  return "other";
}

absl::StatusOr<Topology> PresetTopology(absl::string_view name) {
  if (name == "cpu-host") {
    // Two cores of one host exchange tensors through shared memory: a memcpy
    // at roughly DRAM speed.
    return Uniform("cpu-host", "this machine (2 cores), see CpuHostCore",
                   CpuHostCore(), 2, Link{10e9, 1e-6});
  }
  if (name == "v100x2-pcie") {
    // PCIe 3.0 x16: 15.75 GB/s per direction theoretical, ~12 GB/s achieved
    // by cudaMemcpy peer copies; ~10 us per transfer.
    return Uniform("v100x2-pcie", "NVIDIA V100 datasheet; PCIe 3.0 x16",
                   V100Pcie(), 2, Link{12e9, 10e-6});
  }
  if (name == "v100x4-nvlink") {
    // DGX-1-style: NVLink 2.0 at 25 GB/s per direction per link, two links
    // between each pair of these four GPUs.
    return Uniform("v100x4-nvlink", "NVIDIA V100 datasheet; NVLink 2.0",
                   V100Sxm2(), 4, Link{50e9, 5e-6});
  }
  if (name == "a100x8-nvlink") {
    // DGX A100: NVLink 3 through NVSwitch, 300 GB/s per direction per GPU.
    // Modelled per pair (a GPU sending to several peers at once is
    // optimistic by up to the fan-out).
    return Uniform("a100x8-nvlink", "NVIDIA A100 datasheet; DGX A100 NVSwitch",
                   A100Sxm4(), 8, Link{300e9, 3e-6});
  }
  if (name == "h100x8-nvlink") {
    // DGX H100: NVLink 4 through NVSwitch, 450 GB/s per direction per GPU.
    return Uniform("h100x8-nvlink", "NVIDIA H100 datasheet; DGX H100 NVSwitch",
                   H100Sxm5(), 8, Link{450e9, 3e-6});
  }
  if (name == "tpuv3x8") {
    // A v3-8 board: 4 chips, 8 cores. Cores on one chip share HBM-speed
    // paths; ICI between chips ~70 GB/s per direction per link (Cloud TPU
    // docs give 656 Gbit/s per chip-to-chip link for v3).
    Topology t = Uniform("tpuv3x8", "Google Cloud TPU v3 architecture docs",
                         TpuV3Core(), 8, Link{82e9, 2e-6});
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        if (a / 2 == b / 2) t.links[a * 8 + b] = Link{450e9, 1e-6};
      }
    }
    return t;
  }
  return absl::NotFoundError(
      absl::StrCat("unknown topology '", name,
                   "'; presets: ", absl::StrJoin(PresetTopologyNames(), ", "),
                   " (or pass a topology JSON file)"));
}

}  // namespace gopt::simulator
