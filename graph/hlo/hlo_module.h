#ifndef GOPT_GRAPH_HLO_HLO_MODULE_H_
#define GOPT_GRAPH_HLO_HLO_MODULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/op_attributes.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"

namespace gopt::graph::hlo {

// Deepest nesting accepted anywhere in an HLO module: tuple shapes inside
// tuple shapes, and computations calling computations. Real programs stay far
// below; the bound keeps every reader and the lowering free of unbounded
// recursion on hostile input.
inline constexpr int kMaxHloNestingDepth = 64;

// The type of an HLO value: an array (element type, dims, optional layout) or
// a tuple of values. Tiled layouts keep only their minor_to_major order.
struct HloShape {
  bool is_tuple = false;
  DType dtype = DType::kInvalid;
  std::vector<int64_t> dims;
  // Empty when the text or proto gave no layout (or a rank-0 array).
  std::vector<int32_t> minor_to_major;
  std::vector<HloShape> tuple_shapes;

  // The graph IR type: arrays map one to one; a tuple becomes a TensorType
  // whose tuple_elements are its elements.
  TensorType ToTensorType() const;

  // The graph IR outputs of an instruction of this shape: one entry per
  // top-level tuple element, or one entry for an array.
  std::vector<TensorType> ToNodeOutputs() const;

  // HLO text spelling: "f32[2,3]{1,0}", "(f32[], s32[4]{0})".
  std::string ToString() const;
  void AppendTo(std::string* out) const;

  bool operator==(const HloShape& other) const;
};

// What `metadata={...}` says about an instruction's source: the framework
// op name and either an inline source file and line (older XLA) or a
// stack_frame_id into HloModule::stack_frames (current XLA).
struct HloMetadata {
  std::string op_name;
  std::string source_file;
  int32_t source_line = 0;
  int64_t stack_frame_id = 0;  // 0 = none (XLA's frame ids start at 1)

  bool operator==(const HloMetadata& other) const {
    return op_name == other.op_name && source_file == other.source_file &&
           source_line == other.source_line &&
           stack_frame_id == other.stack_frame_id;
  }
};

// One HLO instruction. Attributes that the graph IR knows (dimensions,
// window, convolution/dot dimension numbers, slices, padding, parameter
// number, tuple index, is_stable, is_root, custom-call target, comparison
// direction) live in `attributes` with XLA's conventions; `iota_dimension`
// is stored in attributes.dimensions, as XLA's proto does.
struct HloInstruction {
  std::string name;    // without the text format's '%'
  std::string opcode;  // "add", "get-tuple-element", ...
  HloShape shape;
  // Indices into the owning computation's instructions.
  std::vector<int32_t> operands;
  // Indices into HloModule::computations. Roles by opcode: while = {body,
  // condition}; conditional = branches (true, false for a predicate);
  // select-and-scatter = {select, scatter}; everything else = {to_apply or
  // calls}.
  std::vector<int32_t> called_computations;
  OpAttributes attributes;
  // Strings few instructions have, out of line (empty when absent):
  // the raw backend config (JSON for most XLA backends),
  OutOfLine<std::string> backend_config;
  // "kLoop", "kOutput", ... for fusion,
  OutOfLine<std::string> fusion_kind;
  // a constant's literal as written in HLO text ("0", "{1, 2}"); empty
  // when read from a proto (literals are not kept),
  OutOfLine<std::string> literal;
  // the source metadata,
  OutOfLine<HloMetadata> metadata;
  // and the SPMD sharding as written ("{devices=[8,1]<=[8]}").
  OutOfLine<std::string> sharding;
  int64_t id = -1;  // the proto's unique id; -1 for text
  // The instruction's index in its computation in the file a gopt export
  // was written from (frontend attribute _gopt_order, kHloOrderAttribute);
  // -1 when the instruction carries none. RestoreGoptExport puts a
  // computation whose instructions all carry one back in that order.
  int32_t export_position = -1;
  // Made up by a pass (the collectives SPMD partitioning inserts), not in
  // the source file: its node gets no SourceElement.
  bool synthetic = false;
};

// A function: instructions in definition order and the index of its root.
struct HloComputation {
  std::string name;
  std::vector<HloInstruction> instructions;
  int32_t root = -1;
  int64_t id = -1;  // the proto's id; -1 for text
};

// The stack-frame tables current XLA prints after the HloModule line
// (FileNames, FunctionNames, FileLocations, StackFrames). Ids are 1-based,
// as XLA prints them; a table maps id -> entry, and an id the text never
// defined resolves to nothing.
struct HloStackFrameIndex {
  struct FileLocation {
    int64_t file_name_id = 0;
    int64_t function_name_id = 0;
    int32_t line = 0;
    int32_t column = 0;
  };
  struct Frame {
    int64_t file_location_id = 0;
    int64_t parent_frame_id = 0;
  };
  absl::flat_hash_map<int64_t, std::string> file_names;
  absl::flat_hash_map<int64_t, std::string> function_names;
  absl::flat_hash_map<int64_t, FileLocation> file_locations;
  absl::flat_hash_map<int64_t, Frame> frames;

  bool empty() const { return frames.empty(); }

  // The innermost source location of frame `frame_id`: file name, function
  // and line. False when the frame or its location is not in the tables.
  bool Resolve(int64_t frame_id, std::string* file, std::string* function,
               int32_t* line) const;
};

// Module-level settings from the HloModule line that change how the
// program is costed.
struct HloModuleConfig {
  bool is_scheduled = false;
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  bool use_auto_spmd_partitioning = false;
};

// A whole HLO program. A module is a plain value: not thread-safe to mutate,
// safe to read from many threads.
struct HloModule {
  std::string name;
  std::vector<HloComputation> computations;
  int32_t entry = -1;  // index into computations
  HloModuleConfig config;
  HloStackFrameIndex stack_frames;
  // What a reader skipped and the user should know (unknown attributes,
  // one entry per distinct name).
  std::vector<std::string> warnings;

  const HloComputation& entry_computation() const {
    return computations[entry];
  }
};

// Checks one array shape without allocating: every dim >= 0, the element
// count and byte size under kMaxTensorBytes, and a layout (when given) that
// is a permutation of 0..rank-1. InvalidArgument describing the problem.
absl::Status ValidateArrayShape(DType dtype, const std::vector<int64_t>& dims,
                                const std::vector<int32_t>& minor_to_major);

// Checks the structural invariants every consumer relies on: an entry
// computation, a root in each computation, operand and called-computation
// indices in range, nesting of tuple shapes within kMaxHloNestingDepth, and
// valid array shapes (non-negative dims, layout a permutation, size under
// kMaxTensorBytes). Returns InvalidArgument naming the computation,
// instruction and field at fault.
absl::Status ValidateHloModule(const HloModule& module);

// The graph IR op kind of an HLO opcode; kOther for an opcode gopt does not
// know.
OpKind HloOpcodeToOpKind(absl::string_view opcode);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_MODULE_H_
