#include "simulator/topology_proto.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "graph/parse_cost.h"
#include "simulator/learned_cost_model.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace {

constexpr int kMaxDevices = 64;

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

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream file(path, std::ios::binary);
  *ok = static_cast<bool>(file);
  std::ostringstream contents;
  if (*ok) contents << file.rdbuf();
  return contents.str();
}

}  // namespace

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
  t.runtime_model_path = proto.runtime_model();
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
  proto.set_runtime_model(topology.runtime_model_path);
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
  if (!topology->runtime_model_path.empty()) {
    const std::filesystem::path model_path =
        std::filesystem::path(name_or_path).parent_path() /
        topology->runtime_model_path;
    absl::StatusOr<std::unique_ptr<LearnedCostModel>> model =
        LearnedCostModel::Load(model_path.string());
    if (!model.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_or_path, ": field runtime_model: ", model.status().message()));
    }
    const std::shared_ptr<const LearnedCostModel> shared = *std::move(model);
    for (DeviceProfile& device : topology->devices) {
      device.runtime_model = shared;
    }
  }
  return topology;
}

}  // namespace gopt::simulator
