#include "tests/util/hostile_inputs.h"

#include <cstdint>

namespace gopt::testing {

std::string LengthDelimited(int field, const std::string& payload) {
  std::string out(1, static_cast<char>(field << 3 | 2));
  uint64_t n = payload.size();
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7F) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
  return out + payload;
}

std::string EmptyNodesFile(const std::string& format, size_t target_bytes) {
  const auto nodes = [&](int field) {
    const std::string node = {static_cast<char>(field << 3 | 2), '\0'};
    std::string out;
    out.reserve(target_bytes + node.size());
    while (out.size() < target_bytes) out += node;
    return out;
  };
  if (format == "gopt") return nodes(3);      // Graph.nodes
  if (format == "graphdef") return nodes(1);  // GraphDef.node
  // ModelProto: ir_version 8, graph { node... }.
  if (format == "onnx") return "\x08\x08" + LengthDelimited(7, nodes(1));
  // HloModuleProto: name, computations { name, instructions... }.
  const std::string module =
      LengthDelimited(1, "m") +
      LengthDelimited(3, LengthDelimited(1, "c") + nodes(2));
  if (format == "hlo-proto") return module;
  return LengthDelimited(1, module);  // tpugraphs: ModuleTuningData.module
}

std::string HostileJson(const std::string& format, size_t target_bytes,
                        bool deep) {
  std::string out =
      format == "tfjs" ? R"({"modelTopology":{"node":)" : R"({"nodes":)";
  if (deep) {
    if (target_bytes > out.size()) out.append(target_bytes - out.size(), '[');
    return out;
  }
  out.reserve(target_bytes + 8);
  out += "[";
  while (out.size() < target_bytes) out += "{},";
  out += format == "tfjs" ? "{}]}}" : "{}]}";
  return out;
}

}  // namespace gopt::testing
