#include "graph/hlo/while_trip_count.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace gopt::graph::hlo {
namespace {

// Steps through copies, converts and the like before giving up: bounds the
// walk on hostile modules whose values chain without end.
constexpr int kMaxChain = 64;

bool IsIntegerScalar(const HloShape& shape) {
  if (shape.is_tuple || !shape.dims.empty()) return false;
  switch (shape.dtype) {
    case DType::kS8:
    case DType::kS16:
    case DType::kS32:
    case DType::kS64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
      return true;
    default:
      return false;
  }
}

// Ops that hand a scalar on unchanged for the analysis' purposes.
bool PassesValueOn(const HloInstruction& instruction) {
  const std::string& op = instruction.opcode;
  return instruction.operands.size() == 1 &&
         (op == "copy" || op == "convert" || op == "bitcast" ||
          op == "reshape");
}

// The integer a scalar constant's literal spells ("5", "-1", or an older
// printer's "s32[] 5").
std::optional<int64_t> ConstantInteger(const HloInstruction& instruction) {
  if (instruction.opcode != "constant" || !IsIntegerScalar(instruction.shape)) {
    return std::nullopt;
  }
  absl::string_view literal =
      absl::StripAsciiWhitespace(instruction.literal.get());
  const size_t space = literal.rfind(' ');
  if (space != absl::string_view::npos) literal.remove_prefix(space + 1);
  int64_t value = 0;
  if (!absl::SimpleAtoi(literal, &value)) return std::nullopt;
  return value;
}

// The value of instruction `index` of `computation` when it is a constant
// integer, following get-tuple-element of tuples and pass-through ops.
std::optional<int64_t> EvaluateConstant(const HloComputation& computation,
                                        int32_t index, int depth);

// The constant element `element` of the tuple value `index` holds.
std::optional<int64_t> EvaluateTupleElement(const HloComputation& computation,
                                            int32_t index, int64_t element,
                                            int depth) {
  if (depth > kMaxChain) return std::nullopt;
  const HloInstruction& instruction = computation.instructions[index];
  if (instruction.opcode == "tuple") {
    if (element < 0 ||
        element >= static_cast<int64_t>(instruction.operands.size())) {
      return std::nullopt;
    }
    return EvaluateConstant(computation, instruction.operands[element],
                            depth + 1);
  }
  if (instruction.opcode == "get-tuple-element" &&
      instruction.operands.size() == 1) {
    // An element of a nested tuple: first find which tuple, then the element.
    const HloInstruction& outer =
        computation.instructions[instruction.operands[0]];
    if (outer.opcode != "tuple") return std::nullopt;
    const int64_t i = instruction.attributes.tuple_index;
    if (i < 0 || i >= static_cast<int64_t>(outer.operands.size())) {
      return std::nullopt;
    }
    return EvaluateTupleElement(computation, outer.operands[i], element,
                                depth + 1);
  }
  if (PassesValueOn(instruction)) {
    return EvaluateTupleElement(computation, instruction.operands[0], element,
                                depth + 1);
  }
  return std::nullopt;
}

std::optional<int64_t> EvaluateConstant(const HloComputation& computation,
                                        int32_t index, int depth) {
  if (depth > kMaxChain) return std::nullopt;
  const HloInstruction& instruction = computation.instructions[index];
  if (instruction.opcode == "constant") return ConstantInteger(instruction);
  if (PassesValueOn(instruction)) {
    return EvaluateConstant(computation, instruction.operands[0], depth + 1);
  }
  if (instruction.opcode == "get-tuple-element" &&
      instruction.operands.size() == 1) {
    return EvaluateTupleElement(computation, instruction.operands[0],
                                instruction.attributes.tuple_index, depth + 1);
  }
  return std::nullopt;
}

// k when instruction `index` of `computation` is element k of the
// computation's (tuple) parameter 0, seen through pass-through ops.
std::optional<int64_t> LoopTupleIndex(const HloComputation& computation,
                                      int32_t index) {
  for (int depth = 0; depth < kMaxChain; ++depth) {
    const HloInstruction& instruction = computation.instructions[index];
    if (instruction.opcode == "get-tuple-element" &&
        instruction.operands.size() == 1) {
      const HloInstruction& tuple =
          computation.instructions[instruction.operands[0]];
      if (tuple.opcode == "parameter" &&
          tuple.attributes.parameter_number == 0) {
        return instruction.attributes.tuple_index;
      }
      return std::nullopt;
    }
    if (!PassesValueOn(instruction)) return std::nullopt;
    index = instruction.operands[0];
  }
  return std::nullopt;
}

// One side of the condition's compare, as the loop tuple sees it: element
// `tuple_index` of the loop state, or a constant.
struct Operand {
  std::optional<int64_t> tuple_index;
  std::optional<int64_t> constant;
};

// The compare at the root of the condition: direction and both sides.
struct LoopCompare {
  std::string direction;
  Operand lhs, rhs;
};

Operand ClassifyOperand(const HloComputation& computation, int32_t index) {
  Operand operand;
  operand.tuple_index = LoopTupleIndex(computation, index);
  if (!operand.tuple_index.has_value()) {
    operand.constant = EvaluateConstant(computation, index, 0);
  }
  return operand;
}

std::optional<LoopCompare> RootCompare(const HloModule& module,
                                       const HloComputation& condition) {
  const HloInstruction& root = condition.instructions[condition.root];
  if (root.opcode == "compare" && root.operands.size() == 2) {
    return LoopCompare{root.attributes.comparison(),
                       ClassifyOperand(condition, root.operands[0]),
                       ClassifyOperand(condition, root.operands[1])};
  }
  // Optimized modules fuse the compare: follow the fused root's operands,
  // each a fused parameter (or constant), back to the fusion's operands.
  if (root.opcode != "fusion" || root.called_computations.size() != 1) {
    return std::nullopt;
  }
  const HloComputation& fused =
      module.computations[root.called_computations[0]];
  const HloInstruction& compare = fused.instructions[fused.root];
  if (compare.opcode != "compare" || compare.operands.size() != 2) {
    return std::nullopt;
  }
  LoopCompare result;
  result.direction = compare.attributes.comparison();
  Operand* sides[] = {&result.lhs, &result.rhs};
  for (int side = 0; side < 2; ++side) {
    const HloInstruction& value = fused.instructions[compare.operands[side]];
    if (value.opcode == "parameter") {
      const int64_t number = value.attributes.parameter_number;
      if (number < 0 || number >= static_cast<int64_t>(root.operands.size())) {
        return std::nullopt;
      }
      *sides[side] = ClassifyOperand(condition, root.operands[number]);
    } else {
      sides[side]->constant =
          EvaluateConstant(fused, compare.operands[side], 0);
    }
  }
  return result;
}

// The constant the body adds to loop element k each iteration; nullopt
// when element k is not `k + c` / `c + k` / `k - c`.
std::optional<int64_t> ConstantStep(const HloComputation& body, int64_t k) {
  const HloInstruction& root = body.instructions[body.root];
  if (root.opcode != "tuple" || k < 0 ||
      k >= static_cast<int64_t>(root.operands.size())) {
    return std::nullopt;
  }
  const HloInstruction& update = body.instructions[root.operands[k]];
  if (update.operands.size() != 2) return std::nullopt;
  const bool add = update.opcode == "add";
  if (!add && update.opcode != "subtract") return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    if (!add && side == 1) break;  // only k - c, never c - k
    if (LoopTupleIndex(body, update.operands[side]) != k) continue;
    std::optional<int64_t> step =
        EvaluateConstant(body, update.operands[1 - side], 0);
    if (!step.has_value()) return std::nullopt;
    return add ? *step : -*step;
  }
  return std::nullopt;
}

// True when the body's root passes loop element j through unchanged.
bool IsLoopInvariant(const HloComputation& body, int64_t j) {
  const HloInstruction& root = body.instructions[body.root];
  if (root.opcode != "tuple" || j < 0 ||
      j >= static_cast<int64_t>(root.operands.size())) {
    return false;
  }
  return LoopTupleIndex(body, root.operands[j]) == j;
}

// Iterations of `for (i = init; i <direction> bound; i += step)`; nullopt
// when the loop would not end or the count does not fit 64 bits.
std::optional<int64_t> CountIterations(absl::string_view direction,
                                       int64_t init, int64_t bound,
                                       int64_t step) {
  // Normalise to an increasing i < limit (or i != limit).
  __int128 distance = static_cast<__int128>(bound) - init;
  __int128 stride = step;
  bool inclusive = false;
  if (direction == "GT" || direction == "GE") {
    distance = -distance;
    stride = -stride;
    inclusive = direction == "GE";
  } else if (direction == "LE") {
    inclusive = true;
  } else if (direction == "NE") {
    if (stride == 0 || distance % stride != 0 || distance / stride < 0) {
      return std::nullopt;
    }
    const __int128 count = distance / stride;
    if (count > INT64_MAX) return std::nullopt;
    return static_cast<int64_t>(count);
  } else if (direction != "LT") {
    return std::nullopt;
  }
  if (inclusive) distance += 1;
  if (distance <= 0) return 0;
  if (stride <= 0) return std::nullopt;
  const __int128 count = (distance + stride - 1) / stride;
  if (count > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(count);
}

// XLA's direction with the operands swapped (a < b is b > a).
std::string Flip(absl::string_view direction) {
  if (direction == "LT") return "GT";
  if (direction == "GT") return "LT";
  if (direction == "LE") return "GE";
  if (direction == "GE") return "LE";
  return std::string(direction);
}

}  // namespace

std::optional<int64_t> DeriveWhileTripCount(
    const HloModule& module, const HloComputation& computation,
    const HloInstruction& while_instruction) {
  if (while_instruction.called_computations.size() != 2 ||
      while_instruction.operands.size() != 1) {
    return std::nullopt;
  }
  const HloComputation& body =
      module.computations[while_instruction.called_computations[0]];
  const HloComputation& condition =
      module.computations[while_instruction.called_computations[1]];
  std::optional<LoopCompare> compare = RootCompare(module, condition);
  if (!compare.has_value()) return std::nullopt;
  const int32_t init_tuple = while_instruction.operands[0];
  // Either side may hold the induction variable; the other is the bound.
  for (int side = 0; side < 2; ++side) {
    const Operand& variable = side == 0 ? compare->lhs : compare->rhs;
    const Operand& bound = side == 0 ? compare->rhs : compare->lhs;
    if (!variable.tuple_index.has_value()) continue;
    const int64_t k = *variable.tuple_index;
    const HloInstruction& root = body.instructions[body.root];
    if (root.opcode != "tuple" ||
        k >= static_cast<int64_t>(root.operands.size()) ||
        !IsIntegerScalar(body.instructions[root.operands[k]].shape)) {
      continue;
    }
    std::optional<int64_t> step = ConstantStep(body, k);
    if (!step.has_value()) continue;
    std::optional<int64_t> limit = bound.constant;
    if (bound.tuple_index.has_value() &&
        IsLoopInvariant(body, *bound.tuple_index)) {
      limit =
          EvaluateTupleElement(computation, init_tuple, *bound.tuple_index, 0);
    }
    if (!limit.has_value()) continue;
    std::optional<int64_t> init =
        EvaluateTupleElement(computation, init_tuple, k, 0);
    if (!init.has_value()) continue;
    const std::string direction =
        side == 0 ? compare->direction : Flip(compare->direction);
    return CountIterations(direction, *init, *limit, *step);
  }
  return std::nullopt;
}

}  // namespace gopt::graph::hlo
