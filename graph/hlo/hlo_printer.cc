#include "graph/hlo/hlo_printer.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph::hlo {
namespace {

void AppendQuoted(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendList(absl::string_view key, const std::vector<int64_t>& values,
                std::string* out) {
  absl::StrAppend(out, ", ", key, "={", absl::StrJoin(values, ","), "}");
}

// "b01f": `first`/`second` at their positions, spatial dims as digits.
std::string Labels(int64_t rank, int64_t first_dim, char first,
                   int64_t second_dim, char second,
                   const std::vector<int64_t>& spatial) {
  std::string labels(static_cast<size_t>(rank), '?');
  auto put = [&](int64_t dim, char c) {
    if (dim >= 0 && dim < rank) labels[dim] = c;
  };
  put(first_dim, first);
  put(second_dim, second);
  for (size_t i = 0; i < spatial.size() && i < 10; ++i) {
    put(spatial[i], static_cast<char>('0' + i));
  }
  return labels;
}

void AppendWindow(const std::vector<WindowDimension>& window,
                  std::string* out) {
  auto join = [&](auto field) {
    std::vector<std::string> parts;
    for (const WindowDimension& dim : window) parts.push_back(field(dim));
    return absl::StrJoin(parts, "x");
  };
  absl::StrAppend(out, ", window={size=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.size);
                  }),
                  " stride=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.stride);
                  }),
                  " pad=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.padding_low, "_", d.padding_high);
                  }),
                  " lhs_dilate=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.base_dilation);
                  }),
                  " rhs_dilate=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.window_dilation);
                  }),
                  " rhs_reversal=", join([](const WindowDimension& d) {
                    return absl::StrCat(d.reversal ? 1 : 0);
                  }),
                  "}");
}

void AppendCalls(const HloModule& module, const HloInstruction& instruction,
                 std::string* out) {
  const std::vector<int32_t>& called = instruction.called_computations;
  if (called.empty()) return;
  auto name = [&](size_t i) {
    return absl::StrCat("%", module.computations[called[i]].name);
  };
  if (instruction.opcode == "while" && called.size() == 2) {
    absl::StrAppend(out, ", condition=", name(1), ", body=", name(0));
  } else if (instruction.opcode == "select-and-scatter" && called.size() == 2) {
    absl::StrAppend(out, ", select=", name(0), ", scatter=", name(1));
  } else if (instruction.opcode == "conditional") {
    std::vector<std::string> names;
    for (size_t i = 0; i < called.size(); ++i) names.push_back(name(i));
    absl::StrAppend(out, ", branch_computations={", absl::StrJoin(names, ", "),
                    "}");
  } else if (called.size() == 1) {
    absl::StrAppend(
        out,
        instruction.opcode == "fusion" ? ", calls=" : ", to_apply=", name(0));
  } else {
    std::vector<std::string> names;
    for (size_t i = 0; i < called.size(); ++i) names.push_back(name(i));
    absl::StrAppend(out, ", called_computations={", absl::StrJoin(names, ", "),
                    "}");
  }
}

void AppendInstruction(const HloModule& module,
                       const HloComputation& computation, int32_t index,
                       std::string* out) {
  const HloInstruction& instruction = computation.instructions[index];
  const OpAttributes& a = instruction.attributes;
  out->append(index == computation.root ? "  ROOT %" : "  %");
  absl::StrAppend(out, instruction.name, " = ");
  instruction.shape.AppendTo(out);
  absl::StrAppend(out, " ", instruction.opcode, "(");
  if (instruction.opcode == "parameter") {
    absl::StrAppend(out, a.parameter_number);
  } else if (instruction.opcode == "constant") {
    out->append(instruction.literal.get().empty() ? "{...}"
                                                  : instruction.literal.get());
  } else {
    for (size_t k = 0; k < instruction.operands.size(); ++k) {
      if (k > 0) out->append(", ");
      absl::StrAppend(out, "%",
                      computation.instructions[instruction.operands[k]].name);
    }
  }
  out->push_back(')');
  if (instruction.opcode == "get-tuple-element") {
    absl::StrAppend(out, ", index=", a.tuple_index);
  }
  if (instruction.opcode == "iota" && a.dimensions.size() == 1) {
    absl::StrAppend(out, ", iota_dimension=", a.dimensions[0]);
  } else if (!a.dimensions.empty()) {
    AppendList("dimensions", a.dimensions, out);
  }
  if (!a.window().empty()) AppendWindow(a.window(), out);
  if (a.has_convolution_dimensions) {
    const ConvolutionDimensions& c = a.convolution();
    const int64_t rank = static_cast<int64_t>(c.input_spatial.size()) + 2;
    absl::StrAppend(
        out, ", dim_labels=",
        Labels(rank, c.input_batch, 'b', c.input_feature, 'f', c.input_spatial),
        "_",
        Labels(rank, c.kernel_input_feature, 'i', c.kernel_output_feature, 'o',
               c.kernel_spatial),
        "->",
        Labels(rank, c.output_batch, 'b', c.output_feature, 'f',
               c.output_spatial));
  }
  if (a.feature_group_count != 1) {
    absl::StrAppend(out, ", feature_group_count=", a.feature_group_count);
  }
  if (a.batch_group_count != 1) {
    absl::StrAppend(out, ", batch_group_count=", a.batch_group_count);
  }
  if (a.has_dot_dimensions) {
    if (!a.dot().lhs_batch.empty()) {
      AppendList("lhs_batch_dims", a.dot().lhs_batch, out);
    }
    AppendList("lhs_contracting_dims", a.dot().lhs_contracting, out);
    if (!a.dot().rhs_batch.empty()) {
      AppendList("rhs_batch_dims", a.dot().rhs_batch, out);
    }
    AppendList("rhs_contracting_dims", a.dot().rhs_contracting, out);
  }
  if (!a.slice_starts().empty()) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < a.slice_starts().size(); ++i) {
      parts.push_back(absl::StrCat("[", a.slice_starts()[i], ":",
                                   a.slice_limits()[i], ":",
                                   a.slice_strides()[i], "]"));
    }
    absl::StrAppend(out, ", slice={", absl::StrJoin(parts, ", "), "}");
  }
  if (!a.dynamic_slice_sizes().empty()) {
    AppendList("dynamic_slice_sizes", a.dynamic_slice_sizes(), out);
  }
  if (!a.padding().empty() && instruction.opcode == "pad") {
    std::vector<std::string> parts;
    for (const PaddingDimension& dim : a.padding()) {
      parts.push_back(absl::StrCat(dim.low, "_", dim.high, "_", dim.interior));
    }
    absl::StrAppend(out, ", padding=", absl::StrJoin(parts, "x"));
  }
  if (a.is_stable) out->append(", is_stable=true");
  if (!a.comparison().empty()) {
    absl::StrAppend(out, ", direction=", a.comparison());
  }
  if (!instruction.fusion_kind.get().empty()) {
    absl::StrAppend(out, ", kind=", instruction.fusion_kind.get());
  }
  AppendCalls(module, instruction, out);
  if (a.collective_group_size > 0) {
    // Only the group size is kept: one group of that many devices.
    absl::StrAppend(out, ", replica_groups=[1,", a.collective_group_size,
                    "]<=[", a.collective_group_size, "]");
  }
  if (!instruction.sharding.get().empty()) {
    absl::StrAppend(out, ", sharding=", instruction.sharding.get());
  }
  if (!a.custom_call_target().empty()) {
    out->append(", custom_call_target=");
    AppendQuoted(a.custom_call_target(), out);
  }
  if (!instruction.backend_config.get().empty()) {
    out->append(", backend_config=");
    AppendQuoted(instruction.backend_config.get(), out);
  }
  out->push_back('\n');
}

}  // namespace

std::string PrintHloModule(const HloModule& module) {
  std::string out;
  absl::StrAppend(&out, "HloModule ", module.name, "\n");
  for (size_t c = 0; c < module.computations.size(); ++c) {
    const HloComputation& computation = module.computations[c];
    absl::StrAppend(&out, "\n",
                    static_cast<int32_t>(c) == module.entry ? "ENTRY " : "",
                    "%", computation.name, " {\n");
    for (size_t i = 0; i < computation.instructions.size(); ++i) {
      AppendInstruction(module, computation, static_cast<int32_t>(i), &out);
    }
    out.append("}\n");
  }
  return out;
}

}  // namespace gopt::graph::hlo
