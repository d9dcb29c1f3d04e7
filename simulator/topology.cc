#include "simulator/topology.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/parse_cost.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace {

constexpr int kMaxDevices = 64;
constexpr double kGiB = 1024.0 * 1024 * 1024;

// What a device or link field may hold. Every simulated time is a sum of
// quotients of graph costs (bounded by GraphBuilder::Build) by these values:
// bounding them (finite, and positive ones at least 1, so never denormal)
// keeps every time the simulator and the baselines compute finite. The
// bounds are orders of magnitude beyond any real hardware.
struct Range {
  double min;
  double max;
};
constexpr Range kPeakFlopsRange = {1, 1e21};
constexpr Range kBandwidthRange = {1, 1e16};
constexpr Range kLaunchOverheadRange = {0, 1};
constexpr Range kLatencyRange = {0, 10};
constexpr Range kDeviceOverheadRange = {0, 1};
constexpr Range kEfficiencyRange = {1e-3, 1};
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 60;
constexpr double kDefaultMaxEfficiency = 0.7;

absl::Status CheckRange(absl::string_view context, absl::string_view field,
                        double value, Range range) {
  if (std::isfinite(value) && value >= range.min && value <= range.max) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(context, " field '", field, "': expected a number in [",
                   range.min, ", ", range.max, "], got ", value));
}

absl::Status CheckLink(absl::string_view context, const gopt::v1::Link& link) {
  RETURN_IF_ERROR(CheckRange(context, "bandwidth_bytes_per_s",
                             link.bandwidth_bytes_per_s(), kBandwidthRange));
  RETURN_IF_ERROR(
      CheckRange(context, "latency_s", link.latency_s(), kLatencyRange));
  return CheckRange(context, "device_overhead_s", link.device_overhead_s(),
                    kDeviceOverheadRange);
}

Link LinkFromProto(const gopt::v1::Link& link) {
  return Link{link.bandwidth_bytes_per_s(), link.latency_s(),
              link.device_overhead_s()};
}

// Reads the calibrated op-class curves of device profile `p` into `d`.
// InvalidArgument naming the device, curve and field for an unknown class,
// a repeated class or a value out of range.
absl::Status ReadOpCurves(absl::string_view context,
                          const gopt::v1::DeviceProfile& p, DeviceProfile* d) {
  for (int i = 0; i < p.op_curves_size(); ++i) {
    const gopt::v1::OpClassCurve& q = p.op_curves(i);
    int c = 1;
    while (c < kNumOpCostClasses &&
           OpCostClassName(static_cast<OpCostClass>(c)) != q.op_class()) {
      ++c;
    }
    const std::string where = absl::StrCat(context, " op_curves[", i, "]");
    if (c == kNumOpCostClasses) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " field 'op_class': '", q.op_class(),
                       "' is not dot, convolution, elementwise, reduction or "
                       "data-movement"));
    }
    if (d->op_curves[c].max_efficiency != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a second curve for '", q.op_class(), "'"));
    }
    RETURN_IF_ERROR(CheckRange(where, "max_efficiency", q.max_efficiency(),
                               kEfficiencyRange));
    RETURN_IF_ERROR(CheckRange(where, "half_efficiency_s",
                               q.half_efficiency_s(), kLaunchOverheadRange));
    RETURN_IF_ERROR(CheckRange(where, "bandwidth_efficiency",
                               q.bandwidth_efficiency(), kEfficiencyRange));
    RETURN_IF_ERROR(CheckRange(where, "launch_overhead_s",
                               q.launch_overhead_s(), kLaunchOverheadRange));
    d->op_curves[c] =
        OpClassCurve{q.max_efficiency(), q.half_efficiency_s(),
                     q.bandwidth_efficiency(), q.launch_overhead_s()};
  }
  return absl::OkStatus();
}

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

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream file(path, std::ios::binary);
  *ok = static_cast<bool>(file);
  std::ostringstream contents;
  if (*ok) contents << file.rdbuf();
  return contents.str();
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

absl::StatusOr<Topology> TopologyFromProto(const gopt::v1::Topology& proto) {
  const int n = proto.devices_size();
  if (n < 1 || n > kMaxDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology '", proto.name(), "' has ", n,
                     " devices; expected 1..", kMaxDevices));
  }
  Topology t;
  t.name = proto.name();
  t.source = proto.source();
  for (int i = 0; i < n; ++i) {
    const gopt::v1::DeviceProfile& p = proto.devices(i);
    const std::string context =
        absl::StrCat("device ", i, " ('", p.name(), "')");
    DeviceProfile d;
    d.name = p.name().empty() ? absl::StrCat("device", i) : p.name();
    if (p.kind() == "cpu") {
      d.kind = DeviceKind::kCpu;
    } else if (p.kind() == "gpu" || p.kind().empty()) {
      d.kind = DeviceKind::kGpu;
    } else if (p.kind() == "tpu") {
      d.kind = DeviceKind::kTpu;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          context, " field 'kind': '", p.kind(), "' is not cpu, gpu or tpu"));
    }
    d.peak_f32_flops = p.peak_f32_flops();
    d.peak_f16_flops = p.peak_f16_flops();
    d.peak_f64_flops = p.peak_f64_flops();
    d.peak_int8_ops = p.peak_int8_ops();
    d.memory_bandwidth_bytes_per_s = p.memory_bandwidth_bytes_per_s();
    d.memory_bytes = p.memory_bytes();
    d.launch_overhead_s = p.launch_overhead_s();
    d.fused_groups_run_op_by_op = p.fused_groups_run_op_by_op();
    d.max_efficiency =
        p.max_efficiency() != 0 ? p.max_efficiency() : kDefaultMaxEfficiency;
    RETURN_IF_ERROR(CheckRange(context, "peak_f32_flops", d.peak_f32_flops,
                               kPeakFlopsRange));
    for (auto [value, field] : {std::pair<double, absl::string_view>{
                                    d.peak_f16_flops, "peak_f16_flops"},
                                {d.peak_f64_flops, "peak_f64_flops"},
                                {d.peak_int8_ops, "peak_int8_ops"}}) {
      // 0 means "not given": PeakFlops falls back to the f32 peak.
      if (value == 0) continue;
      RETURN_IF_ERROR(CheckRange(context, field, value, kPeakFlopsRange));
    }
    RETURN_IF_ERROR(CheckRange(context, "memory_bandwidth_bytes_per_s",
                               d.memory_bandwidth_bytes_per_s,
                               kBandwidthRange));
    if (d.memory_bytes < 1 || d.memory_bytes > kMaxMemoryBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, " field 'memory_bytes': expected 1..",
                       kMaxMemoryBytes, ", got ", d.memory_bytes));
    }
    RETURN_IF_ERROR(CheckRange(context, "launch_overhead_s",
                               d.launch_overhead_s, kLaunchOverheadRange));
    RETURN_IF_ERROR(CheckRange(context, "max_efficiency", d.max_efficiency,
                               kEfficiencyRange));
    RETURN_IF_ERROR(ReadOpCurves(context, p, &d));
    t.devices.push_back(std::move(d));
  }
  const gopt::v1::Link& fallback = proto.default_link();
  const bool has_default = fallback.bandwidth_bytes_per_s() != 0;
  if (has_default) {
    RETURN_IF_ERROR(CheckLink("default_link", fallback));
  }
  t.links.assign(static_cast<size_t>(n) * n, Link{});
  std::vector<bool> set(static_cast<size_t>(n) * n, false);
  for (int i = 0; i < proto.links_size(); ++i) {
    const gopt::v1::Link& l = proto.links(i);
    if (l.src() < 0 || l.src() >= n || l.dst() < 0 || l.dst() >= n ||
        l.src() == l.dst()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "link ", i, " connects devices ", l.src(), " -> ", l.dst(),
          "; expected two different devices in 0..", n - 1));
    }
    RETURN_IF_ERROR(CheckLink(
        absl::StrCat("link ", i, " (", l.src(), " -> ", l.dst(), ")"), l));
    t.links[l.src() * n + l.dst()] = LinkFromProto(l);
    set[l.src() * n + l.dst()] = true;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b || set[a * n + b]) continue;
      if (!has_default) {
        return absl::InvalidArgumentError(absl::StrCat(
            "no link from device ", a, " to device ", b,
            " and no default_link with bandwidth_bytes_per_s > 0"));
      }
      t.links[a * n + b] = LinkFromProto(fallback);
    }
  }
  return t;
}

gopt::v1::Topology TopologyToProto(const Topology& topology) {
  gopt::v1::Topology proto;
  proto.set_name(topology.name);
  proto.set_source(topology.source);
  for (const DeviceProfile& d : topology.devices) {
    gopt::v1::DeviceProfile* p = proto.add_devices();
    p->set_name(d.name);
    p->set_kind(d.kind == DeviceKind::kCpu   ? "cpu"
                : d.kind == DeviceKind::kTpu ? "tpu"
                                             : "gpu");
    p->set_peak_f32_flops(d.peak_f32_flops);
    p->set_peak_f16_flops(d.peak_f16_flops);
    p->set_peak_f64_flops(d.peak_f64_flops);
    p->set_peak_int8_ops(d.peak_int8_ops);
    p->set_memory_bandwidth_bytes_per_s(d.memory_bandwidth_bytes_per_s);
    p->set_memory_bytes(d.memory_bytes);
    p->set_launch_overhead_s(d.launch_overhead_s);
    p->set_max_efficiency(d.max_efficiency);
    p->set_fused_groups_run_op_by_op(d.fused_groups_run_op_by_op);
    for (int c = 1; c < kNumOpCostClasses; ++c) {
      const OpClassCurve& curve = d.op_curves[c];
      if (curve.max_efficiency == 0) continue;
      gopt::v1::OpClassCurve* q = p->add_op_curves();
      q->set_op_class(
          std::string(OpCostClassName(static_cast<OpCostClass>(c))));
      q->set_max_efficiency(curve.max_efficiency);
      q->set_half_efficiency_s(curve.half_efficiency_s);
      q->set_bandwidth_efficiency(curve.bandwidth_efficiency);
      q->set_launch_overhead_s(curve.launch_overhead_s);
    }
  }
  const int n = topology.num_devices();
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      gopt::v1::Link* l = proto.add_links();
      l->set_src(a);
      l->set_dst(b);
      l->set_bandwidth_bytes_per_s(topology.link(a, b).bandwidth_bytes_per_s);
      l->set_latency_s(topology.link(a, b).latency_s);
      l->set_device_overhead_s(topology.link(a, b).device_overhead_s);
    }
  }
  return proto;
}

absl::StatusOr<Topology> LoadTopology(const std::string& name_or_path) {
  absl::StatusOr<Topology> preset = PresetTopology(name_or_path);
  if (preset.ok()) return preset;
  bool ok = false;
  const std::string contents = ReadFile(name_or_path, &ok);
  if (!ok) return preset.status();
  // protobuf's JSON reader has no depth limit of its own.
  if (absl::Status nesting =
          graph::JsonParseCost(contents, "", graph::ParseCostLimits()).status();
      !nesting.ok()) {
    return Annotate(nesting, name_or_path);
  }
  gopt::v1::Topology proto;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(contents, &proto);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_or_path,
        ": not a gopt.v1.Topology JSON file: ", parsed.message().as_string()));
  }
  if (proto.name().empty()) proto.set_name(name_or_path);
  absl::StatusOr<Topology> topology = TopologyFromProto(proto);
  if (!topology.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_or_path, ": ", topology.status().message()));
  }
  return topology;
}

}  // namespace gopt::simulator
