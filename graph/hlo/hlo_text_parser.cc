#include "graph/hlo/hlo_text_parser.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/hlo/gopt_export_restore.h"
#include "graph/hlo/hlo_decisions.h"
#include "graph/hlo/hlo_sharding.h"
#include "graph/hlo/hlo_text_scanner.h"
#include "util/huge_pages.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

// Element types of current XLA that the graph IR has no value for, read as
// the IR type of the same width (so sizes and bytes stay right): the 8-bit
// float variants as f8e4m3fn, 4-bit floats as u4.
absl::StatusOr<DType> NarrowFloatStandIn(absl::string_view name) {
  if (name == "f8e4m3" || name == "f8e4m3fnuz" || name == "f8e4m3b11fnuz" ||
      name == "f8e5m2fnuz" || name == "f8e3m4" || name == "f8e8m0fnu") {
    return DType::kF8E4M3FN;
  }
  if (name == "f4e2m1fn") return DType::kU4;
  return absl::InvalidArgumentError(absl::StrCat("unknown type ", name));
}

// Instruction attributes that XLA's printer writes and that do not change
// the cost gopt gives an op: read past without a warning. Any other unknown
// attribute is skipped with one warning per name.
bool IsKnownSkippedAttribute(absl::string_view key) {
  static const auto* const kKnown = new absl::flat_hash_set<absl::string_view>{
      "frontend_attributes",
      "parameter_replication",
      "origin",
      "original_value",
      "statistics",
      "control-predecessors",
      "result_accuracy",
      "custom_call_schedule",
      "schedule",
      "custom_call_has_side_effect",
      "api_version",
      "operand_layout_constraints",
      "output_to_operand_aliasing",
      "literal",
      "padding_type",
      "precision_config",
      "operand_precision",
      "algorithm",
      "sparsity",
      "lhs_ragged_dims",
      "rhs_group_dims",
      "padding",
      "kind",
      "replica_groups",
      "channel_id",
      "use_global_device_ids",
      "constrain_layout",
      "source_target_pairs",
      "slice_sizes",
      "offset_dims",
      "collapsed_slice_dims",
      "start_index_map",
      "index_vector_dim",
      "operand_batching_dims",
      "start_indices_batching_dims",
      "indices_are_sorted",
      "unique_indices",
      "update_window_dims",
      "inserted_window_dims",
      "scatter_dims_to_operand_dims",
      "input_batching_dims",
      "scatter_indices_batching_dims",
      "type",
      "distribution",
      "rng_algorithm",
      "exponent_bits",
      "mantissa_bits",
      "fft_type",
      "fft_length",
      "infeed_config",
      "outfeed_config",
      "outfeed_shape",
      "is_host_transfer",
      "left_side",
      "lower",
      "unit_diagonal",
      "transpose_a",
      "async_execution_thread",
      "async_group_id",
      "async_wait_on",
      "k",
      "largest",
      "is_cross_program_prefetch",
      "cross_program_prefetch_index",
      "entry",
      "exit",
      "domain",
      "split_count",
      "split_dimension",
      "concat_dimension",
      "serialized_call",
      "is_composite",
      "composite_attributes",
      "scheduling_group_id",
      "execution_thread",
      "to_apply_sharding"};
  return kKnown->contains(key);
}

// A name used before the computation or module is complete, resolved once
// everything is parsed (so definition order does not matter).
struct PendingRef {
  absl::string_view name;
  size_t pos = 0;
};

// Called computations of one instruction by role; their order in
// HloInstruction::called_computations depends on the opcode.
struct PendingCalls {
  int32_t instruction = 0;          // index in the computation
  size_t pos = 0;                   // where the instruction's name starts
  std::vector<PendingRef> generic;  // to_apply, calls, called_computations
  std::vector<PendingRef> branches;
  PendingRef body, condition, true_branch, false_branch, select, scatter;
};

// An operand named before its definition (or never defined), resolved when
// its computation is complete.
struct ForwardOperand {
  int32_t instruction = 0;  // index in the computation
  int32_t operand = 0;      // index in the instruction's operands
  PendingRef ref;
};

// What one computation leaves to resolve. Only instructions that call
// computations and operands defined later have entries: a large computation
// costs nothing here beyond them.
struct PendingComputation {
  std::vector<ForwardOperand> forward_operands;
  std::vector<PendingCalls> calls;  // in instruction order
};

// Counts the newlines before a position in a text, for positions that never
// decrease: each call reads only the text since the previous one.
class LineCounter {
 public:
  explicit LineCounter(absl::string_view text) : text_(text) {}

  // Newlines in text[0, pos); `pos` is at least the previous call's.
  size_t LinesBefore(size_t pos) {
    lines_ += static_cast<size_t>(
        std::count(text_.begin() + counted_, text_.begin() + pos, '\n'));
    counted_ = pos;
    return lines_;
  }

 private:
  absl::string_view text_;
  size_t counted_ = 0;
  size_t lines_ = 0;
};

// Recursive-descent scanner over the text. Every loop consumes input, and
// recursion (tuple shapes) is depth-bounded, so it terminates on any bytes.
class Parser : private HloTextScanner {
 public:
  explicit Parser(absl::string_view text) : HloTextScanner(text) {}

  absl::StatusOr<HloModule> Parse() {
    SkipSpace();
    if (!ConsumeWord("HloModule")) {
      return Error(pos_, "expected 'HloModule' at the start of the text");
    }
    SkipSpace();
    module_.name = std::string(ParseName());
    if (module_.name.empty()) return Error(pos_, "expected the module name");
    while (true) {
      SkipSpace();
      if (!Consume(',')) break;
      RETURN_IF_ERROR(ParseModuleAttribute());
    }
    int32_t entry = -1;
    size_t entry_pos = 0;
    while (true) {
      SkipSpace();
      if (AtEnd()) break;
      ASSIGN_OR_RETURN(bool was_table, ParseStackFrameTable());
      if (was_table) continue;
      const size_t start = pos_;
      const bool is_entry = ConsumeWord("ENTRY");
      if (is_entry) {
        if (entry >= 0) {
          return Error(start, "second ENTRY computation (the first is at " +
                                  Position(entry_pos) + ")");
        }
        entry = static_cast<int32_t>(module_.computations.size());
        entry_pos = start;
      }
      RETURN_IF_ERROR(ParseComputation());
    }
    if (module_.computations.empty()) {
      return Error(pos_, "module has no computations");
    }
    module_.entry = entry >= 0
                        ? entry
                        : static_cast<int32_t>(module_.computations.size()) - 1;
    RETURN_IF_ERROR(ResolveCalls());
    module_.warnings = std::move(warnings_);
    // The module passes ValidateHloModule by construction (every array
    // shape was validated as it was read, nesting is bounded the same way,
    // operands and calls were resolved by name and the root and entry set),
    // so it is not validated a second time here; LowerHloModule checks it.
    return std::move(module_);
  }

 private:
  // Notes an attribute the reader does not know, once per name and kind:
  // it is skipped, never an error, so that text from a newer XLA imports.
  void WarnUnknown(absl::string_view kind, absl::string_view key, size_t pos) {
    if (!unknown_attributes_.insert(absl::StrCat(kind, "/", key)).second) {
      return;
    }
    warnings_.push_back(absl::StrCat("unknown ", kind, " attribute '", key,
                                     "' skipped (first at ", Position(pos),
                                     ")"));
  }

  // One `, key=value` of the HloModule line (the ',' already consumed).
  absl::Status ParseModuleAttribute() {
    SkipSpace();
    const size_t key_pos = pos_;
    const absl::string_view key = ParseName();
    if (key.empty()) return Error(key_pos, "expected an attribute name");
    SkipSpace();
    if (!Consume('=')) return Error(pos_, "expected '=' after attribute");
    SkipSpace();
    HloModuleConfig& config = module_.config;
    if (key == "is_scheduled") {
      ASSIGN_OR_RETURN(config.is_scheduled, ParseBool());
    } else if (key == "use_auto_spmd_partitioning") {
      ASSIGN_OR_RETURN(config.use_auto_spmd_partitioning, ParseBool());
    } else if (key == "replica_count" || key == "num_partitions") {
      const size_t value_pos = pos_;
      ASSIGN_OR_RETURN(int64_t value, ParseInt());
      if (value < 1) {
        return Error(value_pos, absl::StrCat(key, " must be at least 1"));
      }
      (key == "replica_count" ? config.replica_count : config.num_partitions) =
          value;
    } else {
      // Layouts, aliasing, donors and sharding propagation settings do not
      // change the cost of the program.
      static const auto* const kKnown =
          new absl::flat_hash_set<absl::string_view>{
              "entry_computation_layout",
              "input_output_alias",
              "buffer_donor",
              "alias_passthrough_params",
              "allow_spmd_sharding_propagation_to_parameters",
              "allow_spmd_sharding_propagation_to_output",
              "spmd_output_sharding",
              "spmd_parameters_shardings",
              "frontend_attributes",
              "exec_time_optimization_effort",
              "memory_fitting_effort",
              "optimization_level",
              "memory_fitting_level",
              "cross_program_prefetches",
              "launch_bounds"};
      if (!kKnown->contains(key)) WarnUnknown("module", key, key_pos);
      return SkipValue();
    }
    return absl::OkStatus();
  }

  // A stack-frame table (FileNames, FunctionNames, FileLocations or
  // StackFrames) at the current position: parses it into
  // module_.stack_frames and returns true; returns false, consuming
  // nothing, when the text is a computation (even one named like a table).
  absl::StatusOr<bool> ParseStackFrameTable() {
    const size_t start = pos_;
    const absl::string_view table = ParseName();
    const bool strings = table == "FileNames" || table == "FunctionNames";
    if (!strings && table != "FileLocations" && table != "StackFrames") {
      pos_ = start;
      return false;
    }
    SkipSpace();
    // A computation's name is followed by its parameters or body; a table's
    // by its rows (none when the table is empty).
    if (Peek() == '(' || Peek() == '{' || Peek() == ',' || Peek() == '-') {
      pos_ = start;
      return false;
    }
    HloStackFrameIndex& index = module_.stack_frames;
    while (IsDigit(Peek())) {
      ASSIGN_OR_RETURN(const int64_t id, ParseInt());
      SkipSpace();
      if (strings) {
        ASSIGN_OR_RETURN(std::string value, ParseString());
        (table == "FileNames" ? index.file_names : index.function_names)[id] =
            std::move(value);
      } else if (table == "FileLocations") {
        HloStackFrameIndex::FileLocation location;
        RETURN_IF_ERROR(
            ParseTableEntry(table, [&](absl::string_view key, int64_t value) {
              if (key == "file_name_id") {
                location.file_name_id = value;
              } else if (key == "function_name_id") {
                location.function_name_id = value;
              } else if (key == "line") {
                location.line = static_cast<int32_t>(value);
              } else if (key == "column") {
                location.column = static_cast<int32_t>(value);
              } else {
                return key == "end_line" || key == "end_column";
              }
              return true;
            }));
        index.file_locations[id] = location;
      } else {
        HloStackFrameIndex::Frame frame;
        RETURN_IF_ERROR(
            ParseTableEntry(table, [&](absl::string_view key, int64_t value) {
              if (key == "file_location_id") {
                frame.file_location_id = value;
              } else if (key == "parent_frame_id") {
                frame.parent_frame_id = value;
              } else {
                return false;
              }
              return true;
            }));
        index.frames[id] = frame;
      }
      SkipSpace();
    }
    return true;
  }

  // "{key=int key=int ...}" of a FileLocations / StackFrames row. `field`
  // takes each pair and returns false for a key it does not know (skipped
  // with a warning).
  template <typename Field>
  absl::Status ParseTableEntry(absl::string_view table, Field field) {
    if (!Consume('{')) return Error(pos_, "expected '{' to start a table row");
    while (true) {
      SkipSpace();
      if (Consume('}')) return absl::OkStatus();
      if (Consume(',')) continue;
      const size_t key_pos = pos_;
      const absl::string_view key = ParseName();
      if (key.empty()) return Error(key_pos, "expected 'key=' in table row");
      if (!Consume('=')) return Error(pos_, "expected '=' in table row");
      if (IsDigit(Peek()) || Peek() == '-') {
        ASSIGN_OR_RETURN(const int64_t value, ParseInt());
        if (field(key, value)) continue;
      } else {
        RETURN_IF_ERROR(SkipValue());
      }
      WarnUnknown(table, key, key_pos);
    }
  }

  // "{op_name=\"...\" source_file=\"...\" source_line=N stack_frame_id=N
  // ...}"; other fields (op_type, deduplicated_name, scheduling_name,
  // profile_type, ...) are skipped.
  absl::Status ParseMetadata(HloMetadata* metadata) {
    if (!Consume('{')) return Error(pos_, "expected '{' to start metadata");
    while (true) {
      SkipSpace();
      if (Consume('}')) return absl::OkStatus();
      if (Consume(',')) continue;
      const size_t key_pos = pos_;
      const absl::string_view key = ParseName();
      if (key.empty() || !Consume('=')) {
        return Error(key_pos, "expected 'key=' in metadata");
      }
      if (key == "op_name") {
        ASSIGN_OR_RETURN(metadata->op_name, ParseString());
      } else if (key == "source_file") {
        ASSIGN_OR_RETURN(metadata->source_file, ParseString());
      } else if (key == "source_line") {
        ASSIGN_OR_RETURN(const int64_t line, ParseInt());
        metadata->source_line = static_cast<int32_t>(
            std::clamp<int64_t>(line, 0, std::numeric_limits<int32_t>::max()));
      } else if (key == "stack_frame_id") {
        ASSIGN_OR_RETURN(metadata->stack_frame_id, ParseInt());
      } else {
        RETURN_IF_ERROR(SkipValue());
      }
    }
  }

  absl::Status ParseShape(HloShape* shape, int depth) {
    SkipSpace();
    const size_t start = pos_;
    if (depth > kMaxHloNestingDepth) {
      return Error(start, absl::StrCat("tuple shape nested deeper than ",
                                       kMaxHloNestingDepth, " levels"));
    }
    if (Consume('(')) {
      shape->is_tuple = true;
      while (true) {
        SkipSpace();
        if (Consume(')')) return absl::OkStatus();
        if (AtEnd()) return Error(start, "unterminated tuple shape");
        shape->tuple_shapes.emplace_back();
        RETURN_IF_ERROR(ParseShape(&shape->tuple_shapes.back(), depth + 1));
        SkipSpace();
        if (!Consume(',') && Peek() != ')') {
          return Error(pos_, "expected ',' or ')' in tuple shape");
        }
      }
    }
    const size_t type_start = pos_;
    while (pos_ < text_.size() && (IsNameChar(text_[pos_]))) ++pos_;
    return ParseArrayShape(text_.substr(type_start, pos_ - type_start),
                           type_start, shape);
  }

  // Parses "[dims]{layout}" after an element type name already consumed.
  absl::Status ParseArrayShape(absl::string_view type_name, size_t start,
                               HloShape* shape) {
    absl::StatusOr<DType> dtype = DTypeFromName(type_name);
    if (!dtype.ok()) dtype = NarrowFloatStandIn(type_name);
    if (!dtype.ok()) {
      return Error(start, absl::StrCat("expected a shape, found '",
                                       type_name.substr(0, 40), "'"));
    }
    shape->dtype = *dtype;
    if (!Consume('[')) return Error(pos_, "expected '[' after element type");
    // Dims and layout are collected in reused buffers and copied once, so
    // each shape allocates exactly what it keeps.
    int_scratch_.clear();
    while (true) {
      SkipSpace();
      if (Consume(']')) break;
      if (Peek() == '<' && PeekAt(1) == '=') pos_ += 2;  // dynamic bound
      if (Peek() == '?') {
        return Error(pos_, "unbounded dynamic dimension '?' is not supported");
      }
      const size_t dim_pos = pos_;
      ASSIGN_OR_RETURN(int64_t dim, ParseInt());
      if (dim < 0) return Error(dim_pos, "negative dimension");
      int_scratch_.push_back(dim);
      SkipSpace();
      if (!Consume(',') && Peek() != ']') {
        return Error(pos_, "expected ',' or ']' in dimensions");
      }
    }
    shape->dims.assign(int_scratch_.begin(), int_scratch_.end());
    if (Peek() == '{') {
      const size_t layout_pos = pos_;
      ++pos_;
      layout_scratch_.clear();
      while (IsDigit(Peek())) {
        ASSIGN_OR_RETURN(int64_t dim, ParseInt());
        if (dim >= static_cast<int64_t>(shape->dims.size())) {
          return Error(layout_pos, absl::StrCat("layout names dimension ", dim,
                                                " of a rank-",
                                                shape->dims.size(), " shape"));
        }
        layout_scratch_.push_back(static_cast<int32_t>(dim));
        if (!Consume(',')) break;
      }
      shape->minor_to_major.assign(layout_scratch_.begin(),
                                   layout_scratch_.end());
      if (Peek() == ':') {
        // Tiling, element size, memory space: skip up to the closing brace.
        pos_ = layout_pos;
        RETURN_IF_ERROR(SkipBalanced());
      } else if (!Consume('}')) {
        return Error(pos_, "expected '}' after layout");
      }
    }
    absl::Status status =
        ValidateArrayShape(shape->dtype, shape->dims, shape->minor_to_major);
    if (!status.ok()) return Error(start, status.message());
    return absl::OkStatus();
  }

  // "AxBxC" for window sizes; "a_b[_c]xd_e[_f]" groups for padding.
  absl::Status ParseXList(int group, std::vector<std::vector<int64_t>>* out) {
    out->clear();
    while (true) {
      std::vector<int64_t> values;
      for (int i = 0; i < group; ++i) {
        if (i > 0 && !Consume('_')) {
          if (group == 3 && i == 2) break;  // interior padding is optional
          return Error(pos_, "expected '_' in padding");
        }
        ASSIGN_OR_RETURN(int64_t value, ParseInt());
        values.push_back(value);
      }
      out->push_back(std::move(values));
      if (!Consume('x')) return absl::OkStatus();
    }
  }

  absl::Status ParseWindow(OpAttributes* attributes) {
    SkipSpace();
    const size_t start = pos_;
    if (!Consume('{')) return Error(start, "expected '{' to start a window");
    std::vector<WindowDimension>& window = *attributes->mutable_window();
    window.clear();
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      if (AtEnd()) return Error(start, "unterminated window");
      const size_t key_pos = pos_;
      absl::string_view key = ParseName();
      if (key.empty() || !Consume('=')) {
        return Error(key_pos, "expected 'key=' in window");
      }
      const int group = key == "pad" ? 2 : 1;
      std::vector<std::vector<int64_t>> values;
      RETURN_IF_ERROR(ParseXList(group, &values));
      if (window.empty()) window.resize(values.size());
      if (values.size() != window.size()) {
        return Error(key_pos,
                     absl::StrCat("window '", key, "' has ", values.size(),
                                  " dimensions, not ", window.size()));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        const int64_t v = values[i][0];
        WindowDimension& dim = window[i];
        if (key == "size") {
          dim.size = v;
        } else if (key == "stride") {
          dim.stride = v;
        } else if (key == "pad") {
          dim.padding_low = v;
          dim.padding_high = values[i][1];
        } else if (key == "lhs_dilate") {
          dim.base_dilation = v;
        } else if (key == "rhs_dilate") {
          dim.window_dilation = v;
        } else if (key == "rhs_reversal") {
          dim.reversal = v != 0;
        } else {
          return Error(key_pos,
                       absl::StrCat("unknown window field '", key, "'"));
        }
      }
    }
    return absl::OkStatus();
  }

  // One part of dim_labels: 'b'/'f' (or 'i'/'o' for the kernel) and the
  // spatial digits, e.g. "b01f".
  absl::Status ParseLabels(absl::string_view labels, size_t pos, char first,
                           char second, int64_t* first_dim, int64_t* second_dim,
                           std::vector<int64_t>* spatial) {
    *first_dim = -1;
    *second_dim = -1;
    spatial->assign(labels.size(), -1);
    size_t num_spatial = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      const char c = labels[i];
      const int64_t dim = static_cast<int64_t>(i);
      if (c == first && *first_dim < 0) {
        *first_dim = dim;
      } else if (c == second && *second_dim < 0) {
        *second_dim = dim;
      } else if (IsDigit(c) && static_cast<size_t>(c - '0') < labels.size() &&
                 (*spatial)[c - '0'] < 0) {
        (*spatial)[c - '0'] = dim;
        ++num_spatial;
      } else {
        return Error(pos, absl::StrCat("bad dim_labels part '", labels, "'"));
      }
    }
    if (*first_dim < 0 || *second_dim < 0) {
      return Error(pos, absl::StrCat("dim_labels part '", labels, "' lacks '",
                                     std::string(1, first), "' or '",
                                     std::string(1, second), "'"));
    }
    spatial->resize(num_spatial);
    for (int64_t dim : *spatial) {
      if (dim < 0) {
        return Error(pos, absl::StrCat("dim_labels part '", labels,
                                       "' skips a spatial dimension"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseDimLabels(OpAttributes* attributes) {
    SkipSpace();
    const size_t start = pos_;
    ASSIGN_OR_RETURN(absl::string_view value, RawValue());
    const size_t underscore = value.find('_');
    const size_t arrow = value.find("->");
    if (underscore == absl::string_view::npos ||
        arrow == absl::string_view::npos || arrow < underscore) {
      return Error(start, "dim_labels must look like 'b01f_01io->b01f'");
    }
    ConvolutionDimensions& dims = *attributes->mutable_convolution();
    std::vector<int64_t> kernel_spatial, output_spatial;
    RETURN_IF_ERROR(ParseLabels(value.substr(0, underscore), start, 'b', 'f',
                                &dims.input_batch, &dims.input_feature,
                                &dims.input_spatial));
    RETURN_IF_ERROR(
        ParseLabels(value.substr(underscore + 1, arrow - underscore - 1), start,
                    'i', 'o', &dims.kernel_input_feature,
                    &dims.kernel_output_feature, &dims.kernel_spatial));
    RETURN_IF_ERROR(ParseLabels(value.substr(arrow + 2), start, 'b', 'f',
                                &dims.output_batch, &dims.output_feature,
                                &dims.output_spatial));
    if (dims.kernel_spatial.size() != dims.input_spatial.size() ||
        dims.output_spatial.size() != dims.input_spatial.size()) {
      return Error(start, "dim_labels parts have different spatial ranks");
    }
    attributes->has_convolution_dimensions = true;
    return absl::OkStatus();
  }

  // "{[0:2:1], [1:3]}".
  absl::Status ParseSlice(OpAttributes* attributes) {
    SkipSpace();
    if (!Consume('{')) return Error(pos_, "expected '{' to start a slice");
    attributes->mutable_slice_starts()->clear();
    attributes->mutable_slice_limits()->clear();
    attributes->mutable_slice_strides()->clear();
    while (true) {
      SkipSpace();
      if (Consume('}')) return absl::OkStatus();
      if (!Consume('[')) return Error(pos_, "expected '[' in slice");
      ASSIGN_OR_RETURN(int64_t start, ParseInt());
      if (!Consume(':')) return Error(pos_, "expected ':' in slice");
      ASSIGN_OR_RETURN(int64_t limit, ParseInt());
      int64_t stride = 1;
      if (Consume(':')) {
        ASSIGN_OR_RETURN(stride, ParseInt());
      }
      if (!Consume(']')) return Error(pos_, "expected ']' in slice");
      attributes->mutable_slice_starts()->push_back(start);
      attributes->mutable_slice_limits()->push_back(limit);
      attributes->mutable_slice_strides()->push_back(stride);
      SkipSpace();
      Consume(',');
    }
  }

  absl::Status ParseComputationRef(PendingRef* ref) {
    SkipSpace();
    ref->pos = pos_;
    ref->name = ParseName();
    if (ref->name.empty()) return Error(ref->pos, "expected a computation");
    return absl::OkStatus();
  }

  absl::Status ParseComputationList(std::vector<PendingRef>* refs) {
    SkipSpace();
    if (!Consume('{')) return Error(pos_, "expected '{' to start a list");
    while (true) {
      SkipSpace();
      if (Consume('}')) return absl::OkStatus();
      PendingRef ref;
      RETURN_IF_ERROR(ParseComputationRef(&ref));
      refs->push_back(ref);
      SkipSpace();
      if (!Consume(',') && Peek() != '}') {
        return Error(pos_, "expected ',' or '}' in computation list");
      }
    }
  }

  // The pending calls of instruction `index` (name at `pos`), created on
  // first use.
  static PendingCalls& CallsOf(PendingComputation* pending, int32_t index,
                               size_t pos) {
    if (pending->calls.empty() || pending->calls.back().instruction != index) {
      PendingCalls& calls = pending->calls.emplace_back();
      calls.instruction = index;
      calls.pos = pos;
    }
    return pending->calls.back();
  }

  // True for the attributes that name called computations.
  static bool NamesComputations(absl::string_view key) {
    return key == "to_apply" || key == "calls" ||
           key == "called_computations" || key == "branch_computations" ||
           key == "body" || key == "condition" || key == "true_computation" ||
           key == "false_computation" || key == "select" || key == "scatter";
  }

  // Parses the value of an attribute for which NamesComputations(key).
  absl::Status ParseCallAttribute(absl::string_view key, PendingCalls* calls) {
    if (key == "to_apply" || key == "calls") {
      if (Peek() == '{') return ParseComputationList(&calls->generic);
      calls->generic.emplace_back();
      return ParseComputationRef(&calls->generic.back());
    }
    if (key == "called_computations") {
      return ParseComputationList(&calls->generic);
    }
    if (key == "branch_computations") {
      return ParseComputationList(&calls->branches);
    }
    if (key == "body") return ParseComputationRef(&calls->body);
    if (key == "condition") return ParseComputationRef(&calls->condition);
    if (key == "true_computation") {
      return ParseComputationRef(&calls->true_branch);
    }
    if (key == "false_computation") {
      return ParseComputationRef(&calls->false_branch);
    }
    if (key == "select") return ParseComputationRef(&calls->select);
    return ParseComputationRef(&calls->scatter);
  }

  absl::Status ParseAttribute(HloInstruction* instruction, int32_t index,
                              size_t name_pos, PendingComputation* pending) {
    SkipSpace();
    const size_t key_pos = pos_;
    const absl::string_view key = ParseName();
    if (key.empty()) return Error(key_pos, "expected an attribute name");
    SkipSpace();
    if (!Consume('=')) {
      return Error(pos_, absl::StrCat("expected '=' after '", key, "'"));
    }
    SkipSpace();
    OpAttributes& attributes = instruction->attributes;
    if (key == "dimensions") return ParseIntList(&attributes.dimensions);
    if (key == "iota_dimension") {
      ASSIGN_OR_RETURN(int64_t dim, ParseInt());
      attributes.dimensions = {dim};
      return absl::OkStatus();
    }
    if (key == "index") {
      ASSIGN_OR_RETURN(attributes.tuple_index, ParseInt());
      return absl::OkStatus();
    }
    if (key == "direction") {
      *attributes.mutable_comparison() = std::string(ParseName());
      return absl::OkStatus();
    }
    if (key == "window") return ParseWindow(&attributes);
    if (key == "dim_labels") return ParseDimLabels(&attributes);
    if (key == "feature_group_count") {
      ASSIGN_OR_RETURN(attributes.feature_group_count, ParseInt());
      return absl::OkStatus();
    }
    if (key == "batch_group_count") {
      ASSIGN_OR_RETURN(attributes.batch_group_count, ParseInt());
      return absl::OkStatus();
    }
    if (key == "lhs_contracting_dims") {
      return ParseIntList(&attributes.mutable_dot()->lhs_contracting);
    }
    if (key == "rhs_contracting_dims") {
      return ParseIntList(&attributes.mutable_dot()->rhs_contracting);
    }
    if (key == "lhs_batch_dims") {
      return ParseIntList(&attributes.mutable_dot()->lhs_batch);
    }
    if (key == "rhs_batch_dims") {
      return ParseIntList(&attributes.mutable_dot()->rhs_batch);
    }
    if (key == "slice") return ParseSlice(&attributes);
    if (key == "dynamic_slice_sizes") {
      return ParseIntList(attributes.mutable_dynamic_slice_sizes());
    }
    if (key == "padding" && instruction->opcode == "pad") {
      std::vector<std::vector<int64_t>> groups;
      RETURN_IF_ERROR(ParseXList(3, &groups));
      attributes.mutable_padding()->clear();
      for (const std::vector<int64_t>& group : groups) {
        PaddingDimension dim;
        dim.low = group[0];
        dim.high = group[1];
        dim.interior = group.size() > 2 ? group[2] : 0;
        attributes.mutable_padding()->push_back(dim);
      }
      return absl::OkStatus();
    }
    if (key == "is_stable") {
      ASSIGN_OR_RETURN(absl::string_view value, RawValue());
      attributes.is_stable = value == "true";
      return absl::OkStatus();
    }
    if (key == "custom_call_target") {
      ASSIGN_OR_RETURN(*attributes.mutable_custom_call_target(), ParseString());
      return absl::OkStatus();
    }
    if (key == "backend_config") {
      if (Peek() == '"') {
        ASSIGN_OR_RETURN(*instruction->backend_config.mutable_get(),
                         ParseString());
      } else {
        ASSIGN_OR_RETURN(absl::string_view value, RawValue());
        *instruction->backend_config.mutable_get() = std::string(value);
      }
      return absl::OkStatus();
    }
    if (key == "kind" && instruction->opcode == "fusion") {
      *instruction->fusion_kind.mutable_get() = std::string(ParseName());
      return absl::OkStatus();
    }
    if (NamesComputations(key)) {
      return ParseCallAttribute(key, &CallsOf(pending, index, name_pos));
    }
    if (key == "metadata")
      return ParseMetadata(instruction->metadata.mutable_get());
    if (key == "sharding") {
      ASSIGN_OR_RETURN(absl::string_view value, RawValue());
      *instruction->sharding.mutable_get() = std::string(value);
      return absl::OkStatus();
    }
    if (key == "frontend_attributes") return ParseFrontendAttributes();
    if (key == "replica_groups") {
      ASSIGN_OR_RETURN(absl::string_view value, RawValue());
      attributes.collective_group_size = ReplicaGroupSize(value);
      return absl::OkStatus();
    }
    if (!IsKnownSkippedAttribute(key)) WarnUnknown("instruction", key, key_pos);
    return SkipValue();
  }

  // `{key="value", ...}`: notes _gopt_order's value and place for
  // ParseInstruction, skips other keys (and a value of another form).
  absl::Status ParseFrontendAttributes() {
    const size_t start = pos_;
    if (Consume('{')) {
      while (true) {
        SkipSpace();
        if (Consume('}')) return absl::OkStatus();
        if (Consume(',')) continue;
        const absl::string_view key = ParseName();
        SkipSpace();
        if (key.empty() || !Consume('=')) break;
        SkipSpace();
        const size_t value_pos = pos_;
        if (key == kHloOrderAttribute && Peek() == '"') {
          ASSIGN_OR_RETURN(std::string value, ParseString());
          order_value_.emplace(std::move(value), value_pos);
        } else {
          RETURN_IF_ERROR(SkipValue());
        }
      }
    }
    order_value_.reset();
    pos_ = start;
    return SkipValue();
  }

  // Operands defined earlier in the computation (`names`) are resolved at
  // once; others are left in `pending` until the computation is complete.
  absl::Status ParseOperands(
      HloInstruction* instruction, int32_t index,
      const absl::flat_hash_map<absl::string_view, int32_t>& names,
      PendingComputation* pending) {
    const size_t open = pos_;
    if (!Consume('(')) return Error(pos_, "expected '(' after the opcode");
    if (instruction->opcode == "constant") {
      pos_ = open;
      RETURN_IF_ERROR(SkipBalanced());
      *instruction->literal.mutable_get() =
          std::string(text_.substr(open + 1, pos_ - open - 2));
      return absl::OkStatus();
    }
    if (instruction->opcode == "parameter") {
      SkipSpace();
      ASSIGN_OR_RETURN(instruction->attributes.parameter_number, ParseInt());
      SkipSpace();
      if (!Consume(')')) return Error(pos_, "expected ')' after parameter");
      return absl::OkStatus();
    }
    // Collected in a reused buffer and copied once (one allocation).
    operand_scratch_.clear();
    while (true) {
      SkipSpace();
      if (Consume(')')) {
        instruction->operands.assign(operand_scratch_.begin(),
                                     operand_scratch_.end());
        return absl::OkStatus();
      }
      if (AtEnd()) return Error(open, "unterminated operand list");
      // Older syntax writes each operand's type before its name. The type
      // repeats the operand's declaration, so it is skipped, not parsed.
      if (Peek() == '(') {
        RETURN_IF_ERROR(SkipBalanced());
        SkipSpace();
      }
      PendingRef ref;
      ref.pos = pos_;
      ref.name = ParseName();
      if (Peek() == '[') {
        RETURN_IF_ERROR(SkipBalanced());
        if (Peek() == '{') RETURN_IF_ERROR(SkipBalanced());
        SkipSpace();
        ref.pos = pos_;
        ref.name = ParseName();
      }
      if (ref.name.empty()) return Error(ref.pos, "expected an operand name");
      auto it = names.find(ref.name);
      if (it != names.end()) {
        operand_scratch_.push_back(it->second);
      } else {
        pending->forward_operands.push_back(ForwardOperand{
            index, static_cast<int32_t>(operand_scratch_.size()), ref});
        operand_scratch_.push_back(-1);
      }
      SkipSpace();
      if (!Consume(',') && Peek() != ')') {
        return Error(pos_, "expected ',' or ')' after an operand");
      }
    }
  }

  absl::Status ParseInstruction(
      HloComputation* computation, PendingComputation* pending_computation,
      absl::flat_hash_map<absl::string_view, int32_t>* names) {
    const size_t start = pos_;
    const bool is_root = ConsumeWord("ROOT");
    SkipSpace();
    const size_t name_pos = pos_;
    const absl::string_view name = ParseName();
    if (name.empty()) return Error(name_pos, "expected an instruction name");
    const int32_t index =
        static_cast<int32_t>(computation->instructions.size());
    if (!names->emplace(name, index).second) {
      return Error(name_pos,
                   absl::StrCat("duplicate instruction name '%", name,
                                "' in computation '", computation->name, "'"));
    }
    HloInstruction& instruction = computation->instructions.emplace_back();
    instruction.name = std::string(name);
    SkipSpace();
    if (!Consume('=')) {
      return Error(pos_, absl::StrCat("expected '=' after '%", name, "'"));
    }
    RETURN_IF_ERROR(ParseShape(&instruction.shape, 0));
    SkipSpace();
    const size_t opcode_pos = pos_;
    instruction.opcode = std::string(ParseName());
    if (instruction.opcode.empty()) {
      return Error(opcode_pos, "expected an opcode");
    }
    RETURN_IF_ERROR(
        ParseOperands(&instruction, index, *names, pending_computation));
    order_value_.reset();
    while (true) {
      SkipSpace();
      if (!Consume(',')) break;
      RETURN_IF_ERROR(
          ParseAttribute(&instruction, index, name_pos, pending_computation));
    }
    if (order_value_.has_value()) {
      absl::StatusOr<int32_t> position = ParseExportPosition(
          order_value_->first, absl::StrCat("computation '", computation->name,
                                            "' instruction '", name, "'"));
      if (!position.ok()) {
        return Error(order_value_->second, position.status().message());
      }
      instruction.export_position = *position;
    }
    // A while names its body and condition; it needs an entry even when
    // both are missing, so that ResolveCalls reports them.
    if (instruction.opcode == "while") {
      CallsOf(pending_computation, index, name_pos);
    }
    if (instruction.opcode == "dot" || instruction.opcode == "ragged-dot") {
      instruction.attributes.has_dot_dimensions = true;
    }
    if (is_root) {
      if (computation->root >= 0) {
        return Error(start, absl::StrCat("second ROOT in computation '",
                                         computation->name, "'"));
      }
      computation->root = index;
    }
    return absl::OkStatus();
  }

  // The number of lines from `body_pos` to the next line that starts with
  // '}' (the end of a computation body as XLA prints it): an estimate of the
  // body's instruction count, used only to reserve room. Successive calls
  // must pass increasing positions; all calls together read the text at most
  // three times, whatever it holds. Estimates of all computations together
  // stay within reservable_instructions_, so hostile text (bodies that seem
  // to share one far-away brace) cannot make them reserve without bound.
  size_t ExpectedInstructions(size_t body_pos) {
    if (body_close_ < body_pos) {
      body_close_ = std::min(text_.find("\n}", body_pos), text_.size());
    }
    const size_t lines = lines_before_close_.LinesBefore(body_close_) -
                         lines_before_body_.LinesBefore(body_pos);
    const size_t expected = std::min(lines, reservable_instructions_);
    reservable_instructions_ -= expected;
    return expected;
  }

  absl::Status ParseComputation() {
    SkipSpace();
    const size_t name_pos = pos_;
    const absl::string_view name = ParseName();
    if (name.empty()) return Error(name_pos, "expected a computation name");
    if (!computation_index_
             .emplace(name, static_cast<int32_t>(module_.computations.size()))
             .second) {
      return Error(name_pos,
                   absl::StrCat("duplicate computation name '", name, "'"));
    }
    HloComputation& computation = module_.computations.emplace_back();
    PendingComputation& pending = pending_computations_.emplace_back();
    computation.name = std::string(name);
    SkipSpace();
    if (Peek() == '(') RETURN_IF_ERROR(SkipBalanced());  // parameter list
    SkipSpace();
    if (Peek() == '-' && PeekAt(1) == '>') {
      pos_ += 2;
      HloShape ignored;
      RETURN_IF_ERROR(ParseShape(&ignored, 0));
    }
    while (true) {
      SkipSpace();
      if (!Consume(',')) break;
      SkipSpace();
      ParseName();
      SkipSpace();
      if (!Consume('=')) return Error(pos_, "expected '=' after attribute");
      RETURN_IF_ERROR(SkipValue());
    }
    SkipSpace();
    const size_t body_pos = pos_;
    if (!Consume('{')) {
      return Error(
          pos_, absl::StrCat("expected '{' to start computation '", name, "'"));
    }
    // Instructions are large and a big computation has a million of them:
    // room for them and their names is made once, from the number of lines
    // up to the computation's closing brace (usually one instruction each),
    // instead of growing (and moving) as they come.
    const size_t expected = ExpectedInstructions(body_pos);
    computation.instructions.reserve(expected);
    AdviseHugePagesForCapacity(computation.instructions);
    absl::flat_hash_map<absl::string_view, int32_t> names;
    names.reserve(expected);
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      if (AtEnd()) {
        return Error(body_pos, absl::StrCat("computation '", name,
                                            "' is not closed with '}'"));
      }
      RETURN_IF_ERROR(ParseInstruction(&computation, &pending, &names));
    }
    if (computation.instructions.empty()) {
      return Error(name_pos, absl::StrCat("computation '", name, "' is empty"));
    }
    if (computation.root < 0) {
      computation.root =
          static_cast<int32_t>(computation.instructions.size()) - 1;
    }
    for (const ForwardOperand& forward : pending.forward_operands) {
      HloInstruction& instruction =
          computation.instructions[forward.instruction];
      auto it = names.find(forward.ref.name);
      if (it == names.end()) {
        return Error(
            forward.ref.pos,
            absl::StrCat("instruction '%", instruction.name, "' operand ",
                         forward.operand, " '%", forward.ref.name,
                         "' is not defined in computation '", name, "'"));
      }
      instruction.operands[forward.operand] = it->second;
    }
    return absl::OkStatus();
  }

  absl::Status Resolve(const HloInstruction& instruction, const PendingRef& ref,
                       std::vector<int32_t>* out) {
    auto it = computation_index_.find(ref.name);
    if (it == computation_index_.end()) {
      return Error(ref.pos, absl::StrCat("instruction '%", instruction.name,
                                         "' calls undefined computation '%",
                                         ref.name, "'"));
    }
    out->push_back(it->second);
    return absl::OkStatus();
  }

  // Orders each instruction's called computations by role and resolves them.
  absl::Status ResolveCalls() {
    for (size_t c = 0; c < module_.computations.size(); ++c) {
      HloComputation& computation = module_.computations[c];
      for (const PendingCalls& calls : pending_computations_[c].calls) {
        HloInstruction& instruction =
            computation.instructions[calls.instruction];
        std::vector<PendingRef> ordered;
        if (instruction.opcode == "while") {
          if (calls.body.name.empty() || calls.condition.name.empty()) {
            return Error(calls.pos,
                         absl::StrCat("while '%", instruction.name,
                                      "' needs body= and condition="));
          }
          ordered = {calls.body, calls.condition};
        } else if (!calls.branches.empty()) {
          ordered = calls.branches;
        } else if (!calls.true_branch.name.empty() ||
                   !calls.false_branch.name.empty()) {
          if (calls.true_branch.name.empty() ||
              calls.false_branch.name.empty()) {
            return Error(calls.pos,
                         absl::StrCat("conditional '%", instruction.name,
                                      "' needs both true_computation= and "
                                      "false_computation="));
          }
          ordered = {calls.true_branch, calls.false_branch};
        } else if (!calls.select.name.empty() || !calls.scatter.name.empty()) {
          if (calls.select.name.empty() || calls.scatter.name.empty()) {
            return Error(calls.pos,
                         absl::StrCat("select-and-scatter '%", instruction.name,
                                      "' needs select= and scatter="));
          }
          ordered = {calls.select, calls.scatter};
        } else {
          ordered = calls.generic;
        }
        instruction.called_computations.reserve(ordered.size());
        for (const PendingRef& ref : ordered) {
          RETURN_IF_ERROR(
              Resolve(instruction, ref, &instruction.called_computations));
        }
      }
    }
    return absl::OkStatus();
  }

  HloModule module_;
  // For ExpectedInstructions: the end of the body being estimated, and
  // newline counts up to body starts and up to body ends.
  size_t body_close_ = 0;
  LineCounter lines_before_body_{text_};
  LineCounter lines_before_close_{text_};
  // What ExpectedInstructions may still hand out: an instruction takes at
  // least 8 bytes of text ("a=u8[]x()"), and beyond 4M instructions vectors
  // grow as usual.
  size_t reservable_instructions_ = std::min(text_.size() / 8, size_t{1} << 22);
  // Reused buffers for the dims, layout and operands of one instruction.
  std::vector<int64_t> int_scratch_;
  std::vector<int32_t> layout_scratch_;
  std::vector<int32_t> operand_scratch_;
  // The _gopt_order value of the instruction being parsed and where it is.
  std::optional<std::pair<std::string, size_t>> order_value_;
  std::vector<PendingComputation> pending_computations_;
  absl::flat_hash_map<absl::string_view, int32_t> computation_index_;
  // "kind/name" of every unknown attribute warned about, and the warnings.
  absl::flat_hash_set<std::string> unknown_attributes_;
  std::vector<std::string> warnings_;
};

}  // namespace

absl::StatusOr<HloModule> ParseHloText(absl::string_view text) {
  return Parser(text).Parse();
}

bool LooksLikeHloText(absl::string_view text) {
  size_t pos = 0;
  // Bounded: a sniff looks at a prefix only.
  const size_t limit = std::min<size_t>(text.size(), 64 * 1024);
  while (pos < limit) {
    const char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos;
    } else if (c == '/' && pos + 1 < limit && text[pos + 1] == '/') {
      const size_t end = text.find('\n', pos);
      if (end == absl::string_view::npos) return false;
      pos = end + 1;
    } else if (c == '/' && pos + 1 < limit && text[pos + 1] == '*') {
      const size_t end = text.find("*/", pos + 2);
      if (end == absl::string_view::npos) return false;
      pos = end + 2;
    } else {
      break;
    }
  }
  constexpr absl::string_view kWord = "HloModule";
  if (text.substr(pos, kWord.size()) != kWord) return false;
  const size_t after = pos + kWord.size();
  return after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                 text[after] == '\n' || text[after] == '\r');
}

}  // namespace gopt::graph::hlo
