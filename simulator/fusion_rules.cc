#include "simulator/fusion_rules.h"

namespace gopt::simulator {

FusionRole FusionRoleOf(graph::OpKind kind) {
  using graph::OpKind;
  if (kind == OpKind::kDot || kind == OpKind::kConvolution) {
    return FusionRole::kHeavy;
  }
  if (graph::OpKindCategory(kind) == graph::OpCategory::kElementwise) {
    return FusionRole::kCheap;
  }
  switch (kind) {
    case OpKind::kReduce:
    case OpKind::kReduceWindow:
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kCopy:
    case OpKind::kSlice:
    case OpKind::kDynamicSlice:
    case OpKind::kPad:
    case OpKind::kConcatenate:
    case OpKind::kReverse:
    case OpKind::kReshape:
    case OpKind::kBitcast:
      return FusionRole::kCheap;
    default:
      return FusionRole::kAlone;
  }
}

}  // namespace gopt::simulator
