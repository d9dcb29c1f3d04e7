#include "graph/op_kind.h"

#include <array>

namespace gopt::graph {
namespace {

struct OpKindInfo {
  absl::string_view name;
  OpCategory category;
};

constexpr std::array<OpKindInfo, kNumOpKinds> kOpKinds = {{
#define GOPT_OP_KIND_INFO_(e, name, category) {name, OpCategory::category},
    GOPT_OP_KINDS(GOPT_OP_KIND_INFO_)
#undef GOPT_OP_KIND_INFO_
}};

}  // namespace

absl::string_view OpKindName(OpKind kind) {
  return kOpKinds[static_cast<int>(kind)].name;
}

std::optional<OpKind> OpKindFromName(absl::string_view name) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    if (kOpKinds[i].name == name) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

OpCategory OpKindCategory(OpKind kind) {
  return kOpKinds[static_cast<int>(kind)].category;
}

bool IsFreeOpKind(OpKind kind) {
  switch (kind) {
    case OpKind::kParameter:
    case OpKind::kConstant:
    case OpKind::kReshape:
    case OpKind::kBitcast:
    case OpKind::kTuple:
    case OpKind::kGetTupleElement:
    case OpKind::kIdentity:
    case OpKind::kShapeOf:
    case OpKind::kLoopControl:
      return true;
    default:
      return false;
  }
}

}  // namespace gopt::graph
