#include "graph/hlo/spmd_partitioner.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/hlo_sharding.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

// How one value is split over the mesh as the partitioner tracks it: per
// array dimension the number of tiles and the device of each tile (empty:
// not written, e.g. derived or replicated); a tuple's elements.
struct Tiling {
  bool tuple = false;
  std::vector<int64_t> tiles;
  std::vector<int64_t> devices;
  std::vector<Tiling> elements;
};

int64_t Product(const std::vector<int64_t>& values) {
  int64_t product = 1;
  for (int64_t v : values) product *= v;
  return product;
}

Tiling Replicated(const HloShape& shape) {
  Tiling tiling;
  tiling.tuple = shape.is_tuple;
  if (shape.is_tuple) {
    for (const HloShape& element : shape.tuple_shapes) {
      tiling.elements.push_back(Replicated(element));
    }
  } else {
    tiling.tiles.assign(shape.dims.size(), 1);
  }
  return tiling;
}

// Same split: equal tiles (recursively), and equal devices where both say.
bool SameTiling(const Tiling& a, const Tiling& b) {
  if (a.tuple != b.tuple || a.tiles != b.tiles ||
      a.elements.size() != b.elements.size()) {
    return false;
  }
  if (a.devices.size() == b.devices.size() && a.devices != b.devices) {
    return false;
  }
  for (size_t i = 0; i < a.elements.size(); ++i) {
    if (!SameTiling(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

HloShape ShardShape(const HloShape& global, const Tiling& tiling) {
  HloShape shard = global;
  if (global.is_tuple) {
    for (size_t i = 0; i < shard.tuple_shapes.size(); ++i) {
      if (i < tiling.elements.size()) {
        shard.tuple_shapes[i] =
            ShardShape(global.tuple_shapes[i], tiling.elements[i]);
      }
    }
    return shard;
  }
  for (size_t i = 0; i < shard.dims.size() && i < tiling.tiles.size(); ++i) {
    shard.dims[i] = (shard.dims[i] + tiling.tiles[i] - 1) / tiling.tiles[i];
  }
  return shard;
}

// Whether `tiling` has the structure of `shape` (hostile text can pair a
// tuple element with a shape that differs; the lowering reports those).
bool Fits(const Tiling& tiling, const HloShape& shape) {
  if (tiling.tuple != shape.is_tuple) return false;
  if (!shape.is_tuple) return tiling.tiles.size() == shape.dims.size();
  if (tiling.elements.size() != shape.tuple_shapes.size()) return false;
  for (size_t i = 0; i < tiling.elements.size(); ++i) {
    if (!Fits(tiling.elements[i], shape.tuple_shapes[i])) return false;
  }
  return true;
}

absl::StatusOr<Tiling> TilingOf(const HloSharding& sharding,
                                const HloShape& shape) {
  if (shape.is_tuple) {
    Tiling tiling;
    tiling.tuple = true;
    const bool per_element = sharding.kind == HloSharding::Kind::kTuple;
    if (per_element && sharding.elements.size() != shape.tuple_shapes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuple sharding of ", sharding.elements.size(),
                       " elements for a tuple of ", shape.tuple_shapes.size()));
    }
    for (size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      ASSIGN_OR_RETURN(Tiling element,
                       TilingOf(per_element ? sharding.elements[i] : sharding,
                                shape.tuple_shapes[i]));
      tiling.elements.push_back(std::move(element));
    }
    return tiling;
  }
  if (sharding.kind == HloSharding::Kind::kTuple) {
    if (sharding.elements.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuple sharding of ", sharding.elements.size(),
                       " elements for array shape ", shape.ToString()));
    }
    return TilingOf(sharding.elements[0], shape);
  }
  Tiling tiling = Replicated(shape);
  if (sharding.kind != HloSharding::Kind::kTiled) return tiling;
  const size_t data_dims = sharding.tile_dims.size() - sharding.subgroup_dims;
  if (data_dims != shape.dims.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharding tiles ", data_dims, " dimensions of shape ",
                     shape.ToString(), " (rank ", shape.dims.size(), ")"));
  }
  for (size_t i = 0; i < data_dims; ++i)
    tiling.tiles[i] = sharding.tile_dims[i];
  tiling.devices = sharding.devices;
  return tiling;
}

bool IsCollectiveOpcode(absl::string_view opcode) {
  const OpKind kind = HloOpcodeToOpKind(opcode);
  return OpKindCategory(kind) == OpCategory::kCollective ||
         (absl::EndsWith(opcode, "-done") &&
          (absl::StartsWith(opcode, "all-") ||
           absl::StartsWith(opcode, "collective")));
}

bool IsPartitionerCustomCall(const HloInstruction& instruction) {
  if (instruction.opcode != "custom-call") return false;
  const std::string& target = instruction.attributes.custom_call_target();
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape";
}

// How an op's output dimensions come from its operands': operand_dim[k][o]
// is the dimension of operand k that output dimension o passes through
// (-1: none). Output dimensions no operand feeds may still be split when
// `split_unfed` (broadcast writes any part of its output); a reshape's
// tiles must divide both dimensions (`divisible`).
struct DimRule {
  std::vector<std::vector<int>> operand_dim;
  bool split_unfed = false;
  bool divisible = false;
};

// Partial sums: the operand dimensions a dot contracts or a reduce reduces
// may stay split; the result then needs a sum over `group` devices.
struct PartialDims {
  std::vector<std::pair<int, int>> dims;  // (operand, dimension) per group
  std::vector<std::vector<std::pair<int, int>>> paired;  // split together
};

class Partitioner {
 public:
  Partitioner(HloModule* module, SpmdPartitionResult* result)
      : module_(*module),
        result_(*result),
        done_(module->computations.size(), 0),
        params_(module->computations.size()),
        roots_(module->computations.size()) {}

  absl::Status Run() {
    RETURN_IF_ERROR(Survey());
    if (!result_.spmd || already_partitioned_) return absl::OkStatus();
    // The rewrite indexes operands, roots and called computations.
    RETURN_IF_ERROR(ValidateHloModule(module_));
    result_.partitioned = true;
    RETURN_IF_ERROR(Partition(module_.entry, nullptr, nullptr));
    if (!unpartitioned_.empty()) {
      std::vector<std::string> ops;
      int64_t count = 0;
      for (const auto& [op, n] : unpartitioned_) {
        ops.push_back(absl::StrCat(op, " x", n));
        count += n;
      }
      result_.warnings.push_back(absl::StrCat(
          "SPMD: ", count,
          " op(s) have no partitioning rule and run on their full operands "
          "(all-gathered where sharded): ",
          absl::StrJoin(ops, ", ")));
    }
    return absl::OkStatus();
  }

 private:
  // Parses every sharding once; decides whether the module is an SPMD
  // program, how many devices its mesh has, and whether it came
  // partitioned.
  absl::Status Survey() {
    int64_t most_devices = 1;
    bool tiled = false;
    bool partitioner_calls = false;
    bool partitioned_ops = module_.config.is_scheduled;
    for (HloComputation& computation : module_.computations) {
      for (HloInstruction& instruction : computation.instructions) {
        partitioner_calls |= IsPartitionerCustomCall(instruction);
        partitioned_ops |= instruction.opcode == "fusion" ||
                           instruction.opcode == "partition-id" ||
                           IsCollectiveOpcode(instruction.opcode);
        const std::string& text = instruction.sharding.get();
        if (text.empty()) continue;
        absl::StatusOr<HloSharding> sharding = ParseHloSharding(text);
        if (!sharding.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("instruction '", instruction.name,
                           "': ", sharding.status().message()));
        }
        Visit(*sharding, &tiled, &most_devices);
        shardings_.emplace(&instruction, *std::move(sharding));
      }
    }
    const int64_t partitions = module_.config.num_partitions;
    result_.spmd = partitions > 1 || tiled;
    result_.num_partitions = partitions > 1 ? partitions : most_devices;
    if (partitions > 1 && most_devices > partitions) {
      result_.warnings.push_back(absl::StrCat(
          "SPMD: a sharding names ", most_devices,
          " devices but the module has ", partitions, " partitions"));
    }
    already_partitioned_ = partitioned_ops && !partitioner_calls;
    return absl::OkStatus();
  }

  static void Visit(const HloSharding& sharding, bool* tiled,
                    int64_t* most_devices) {
    if (sharding.kind == HloSharding::Kind::kTiled) {
      *tiled = true;
      *most_devices = std::max(*most_devices, Product(sharding.tile_dims));
    }
    for (const HloSharding& element : sharding.elements) {
      Visit(element, tiled, most_devices);
    }
  }

  // The tiling an instruction's own `sharding=` asks for, if any.
  absl::StatusOr<std::optional<Tiling>> Wanted(const HloInstruction& old,
                                               const HloInstruction* key) {
    auto it = shardings_.find(key);
    if (it == shardings_.end()) return std::optional<Tiling>();
    absl::StatusOr<Tiling> tiling = TilingOf(it->second, old.shape);
    if (!tiling.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "instruction '", old.name, "': ", tiling.status().message()));
    }
    return std::optional<Tiling>(*std::move(tiling));
  }

  // Values made from nothing the mesh splits (constants, iotas, and
  // broadcasts, reshapes, transposes and elementwise ops of them or of
  // replicated values), without a sharding of their own, are made where
  // they are used, split as their user needs them: the partitioner's
  // sharding propagation gives them their users' sharding, so each device
  // makes only its part (a mask or a broadcast bias the size of an
  // activation is not made in full and sliced).
  struct Deferred {
    // How many deferred values a chain may hold: Make recurses through it.
    static constexpr int32_t kMaxDepth = 64;
    explicit Deferred(size_t n) : is(n, false), depth(n, 0), made(n) {}
    std::vector<bool> is;
    // The longest chain of deferred values ending in each.
    std::vector<int32_t> depth;
    // Per deferred value: each split it was made as, and where.
    std::vector<std::vector<std::pair<Tiling, int32_t>>> made;
  };

  // Per computation being rewritten.
  struct Scope {
    std::vector<HloInstruction> out;
    absl::flat_hash_set<std::string> names;
  };

  std::string UniqueName(Scope& scope, const std::string& base) {
    std::string name = base;
    for (int n = 1; !scope.names.insert(name).second; ++n) {
      name = absl::StrCat(base, ".", n);
    }
    return name;
  }

  // Appends a synthetic instruction; returns its index.
  int32_t Emit(Scope& scope, const std::string& opcode, HloShape shape,
               std::vector<int32_t> operands, const std::string& value_name,
               const HloInstruction& context, int64_t group = 0) {
    HloInstruction instruction;
    instruction.name =
        UniqueName(scope, absl::StrCat(value_name, ".spmd.", opcode));
    instruction.opcode = opcode;
    instruction.shape = std::move(shape);
    instruction.operands = std::move(operands);
    instruction.metadata = context.metadata;
    instruction.synthetic = true;
    if (group > 0) {
      instruction.attributes.collective_group_size = group;
      ++result_.inserted[opcode];
    }
    scope.out.push_back(std::move(instruction));
    return static_cast<int32_t>(scope.out.size()) - 1;
  }

  // Makes `value` (global shape `global`, split as `from`) split as `to`,
  // inserting the collectives (and local slices) that move it; returns the
  // index of the resharded value.
  int32_t Reshard(Scope& scope, int32_t value, const HloShape& global,
                  const Tiling& from, const Tiling& to,
                  const HloInstruction& context) {
    if (SameTiling(from, to)) return value;
    // A copy: Emit grows scope.out.
    const std::string name = scope.out[value].name;
    if (global.is_tuple) {
      std::vector<int32_t> elements;
      HloShape shape = ShardShape(global, to);
      for (size_t i = 0; i < global.tuple_shapes.size(); ++i) {
        const int32_t gte_index =
            Emit(scope, "get-tuple-element",
                 ShardShape(global.tuple_shapes[i], from.elements[i]), {value},
                 name, context);
        scope.out[gte_index].attributes.tuple_index = static_cast<int64_t>(i);
        elements.push_back(Reshard(scope, gte_index, global.tuple_shapes[i],
                                   from.elements[i], to.elements[i], context));
      }
      return Emit(scope, "tuple", std::move(shape), std::move(elements), name,
                  context);
    }
    if (from.tiles == to.tiles) {  // only the device order differs
      return Emit(scope, "collective-permute", ShardShape(global, to), {value},
                  name, context, result_.num_partitions);
    }
    Tiling common = to;
    common.devices.clear();
    int64_t gather = 1;
    int64_t split = 1;
    std::vector<int64_t> gathered_dims;
    for (size_t d = 0; d < to.tiles.size(); ++d) {
      common.tiles[d] = std::gcd(from.tiles[d], to.tiles[d]);
      gather *= from.tiles[d] / common.tiles[d];
      split *= to.tiles[d] / common.tiles[d];
      if (from.tiles[d] != common.tiles[d]) {
        gathered_dims.push_back(static_cast<int64_t>(d));
      }
    }
    if (gather > 1 && gather == split) {
      return Emit(scope, "all-to-all", ShardShape(global, to), {value}, name,
                  context, gather);
    }
    if (gather > 1) {
      value = Emit(scope, "all-gather", ShardShape(global, common), {value},
                   name, context, gather);
      scope.out[value].attributes.dimensions = gathered_dims;
    }
    if (split > 1) value = Slice(scope, value, ShardShape(global, to), context);
    return value;
  }

  // The leading `shape.dims` of `value`: the local part of a finer split.
  int32_t Slice(Scope& scope, int32_t value, HloShape shape,
                const HloInstruction& context) {
    const std::string name = scope.out[value].name;
    const std::vector<int64_t> limits = shape.dims;
    const int32_t slice =
        Emit(scope, "slice", std::move(shape), {value}, name, context);
    OpAttributes& attributes = scope.out[slice].attributes;
    *attributes.mutable_slice_starts() = std::vector<int64_t>(limits.size(), 0);
    *attributes.mutable_slice_limits() = limits;
    *attributes.mutable_slice_strides() =
        std::vector<int64_t>(limits.size(), 1);
    return slice;
  }

  // Rewrites computation `index` in place: parameters split as
  // `param_tilings` (null: their own shardings), the root resharded to
  // `root_tiling` when given. Records the parameters' and root's tilings.
  absl::Status Partition(int32_t index,
                         const std::vector<Tiling>* param_tilings,
                         const Tiling* root_tiling) {
    done_[index] = 1;
    HloComputation& computation = module_.computations[index];
    if (++depth_ > kMaxHloNestingDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation '", computation.name, "': calls nest deeper than ",
          kMaxHloNestingDepth, " levels"));
    }
    // shardings_ is keyed by instruction address: moving the vector keeps
    // its buffer, so the keys stay valid for `old`.
    std::vector<HloInstruction> old = std::move(computation.instructions);
    Scope scope;
    for (const HloInstruction& instruction : old) {
      scope.names.insert(instruction.name);
    }
    ASSIGN_OR_RETURN(std::vector<int32_t> order, Order(old, computation.name));
    std::vector<int32_t> at(old.size(), -1);
    std::vector<Tiling> tiling(old.size());
    Deferred deferred(old.size());
    params_[index].clear();
    for (int32_t i : order) {
      if (Defer(old, i, tiling, &deferred)) {
        tiling[i] = Replicated(old[i].shape);
        continue;
      }
      RETURN_IF_ERROR(PartitionInstruction(scope, old, i, param_tilings, &at,
                                           &tiling, &deferred, index));
    }
    // A deferred value no op used, and the root, are made as they are.
    for (int32_t i : order) {
      if (deferred.is[i] &&
          (deferred.made[i].empty() || i == computation.root)) {
        at[i] = Make(scope, old, i, tiling[i], at, tiling, &deferred);
      }
    }
    int32_t root = at[computation.root];
    if (root_tiling != nullptr &&
        Fits(*root_tiling, old[computation.root].shape)) {
      root = Reshard(scope, root, old[computation.root].shape,
                     tiling[computation.root], *root_tiling,
                     old[computation.root]);
      roots_[index] = *root_tiling;
    } else {
      roots_[index] = tiling[computation.root];
    }
    computation.instructions = std::move(scope.out);
    computation.root = root;
    --depth_;
    return absl::OkStatus();
  }

  // Operands before users; InvalidArgument naming the computation for an
  // operand index out of range or a cycle.
  static absl::StatusOr<std::vector<int32_t>> Order(
      const std::vector<HloInstruction>& instructions,
      const std::string& computation) {
    const int32_t n = static_cast<int32_t>(instructions.size());
    std::vector<int32_t> pending(n, 0);
    std::vector<std::vector<int32_t>> users(n);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t operand : instructions[i].operands) {
        if (operand < 0 || operand >= n) {
          return absl::InvalidArgumentError(absl::StrCat(
              "computation '", computation, "': instruction '",
              instructions[i].name, "' has operand index ", operand));
        }
        ++pending[i];
        users[operand].push_back(i);
      }
    }
    std::vector<int32_t> order;
    order.reserve(n);
    for (int32_t i = 0; i < n; ++i) {
      if (pending[i] == 0) order.push_back(i);
    }
    for (size_t k = 0; k < order.size(); ++k) {
      for (int32_t user : users[order[k]]) {
        if (--pending[user] == 0) order.push_back(user);
      }
    }
    if (static_cast<int32_t>(order.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation '", computation, "': instructions form a cycle"));
    }
    return order;
  }

  absl::Status PartitionInstruction(
      Scope& scope, const std::vector<HloInstruction>& old, int32_t i,
      const std::vector<Tiling>* param_tilings, std::vector<int32_t>* at,
      std::vector<Tiling>* tiling, Deferred* deferred, int32_t computation) {
    const HloInstruction& original = old[i];
    ASSIGN_OR_RETURN(std::optional<Tiling> wanted, Wanted(original, &original));
    HloInstruction ins = original;
    const size_t n = original.operands.size();
    std::vector<const Tiling*> current(n);
    std::vector<const HloShape*> global(n);
    for (size_t k = 0; k < n; ++k) {
      current[k] = &(*tiling)[original.operands[k]];
      global[k] = &old[original.operands[k]].shape;
    }
    // What each operand must be split as, what the op's value then is, and
    // the devices its partial sums span (1: none).
    std::vector<Tiling> required(n);
    for (size_t k = 0; k < n; ++k) required[k] = *current[k];
    Tiling natural;
    int64_t partial = 1;
    std::optional<Tiling> scatter_to;  // reduce-scatter the partial sums
    const OpKind kind = HloOpcodeToOpKind(original.opcode);
    const std::string& opcode = original.opcode;

    if (opcode == "parameter") {
      const int64_t number = original.attributes.parameter_number;
      if (param_tilings != nullptr && number >= 0 &&
          number < static_cast<int64_t>(param_tilings->size())) {
        natural = (*param_tilings)[number];
      } else {
        natural = wanted.has_value() ? *wanted : Replicated(original.shape);
      }
      // A computation has fewer parameters than instructions.
      if (number >= 0 && number < static_cast<int64_t>(old.size())) {
        if (params_[computation].size() <= static_cast<size_t>(number)) {
          params_[computation].resize(number + 1);
        }
        params_[computation][number] = natural;
      }
      wanted.reset();
    } else if (n == 0) {  // constants, iota, rng: each device makes its part
      natural = wanted.has_value() ? *wanted : Replicated(original.shape);
    } else if (kind == OpKind::kGetTupleElement) {
      const int64_t index = original.attributes.tuple_index;
      natural =
          current[0]->tuple && index >= 0 &&
                  index < static_cast<int64_t>(current[0]->elements.size())
              ? current[0]->elements[index]
              : Replicated(original.shape);
    } else if (kind == OpKind::kTuple) {
      natural.tuple = true;
      for (size_t k = 0; k < n; ++k) {
        if (wanted.has_value() && wanted->tuple &&
            k < wanted->elements.size()) {
          required[k] = wanted->elements[k];
        }
        natural.elements.push_back(required[k]);
      }
    } else if (opcode == "while" && n == 1 &&
               original.called_computations.size() == 2) {
      RETURN_IF_ERROR(CallBodies(original.called_computations, {0}, current,
                                 &required, &natural));
    } else if (opcode == "call" && original.called_computations.size() == 1) {
      std::vector<int> all(n);
      std::iota(all.begin(), all.end(), 0);
      RETURN_IF_ERROR(CallBodies(original.called_computations, all, current,
                                 &required, &natural));
    } else if (opcode == "conditional" && n >= 1 &&
               original.called_computations.size() == n - 1) {
      required[0] = Replicated(*global[0]);
      RETURN_IF_ERROR(Branches(original, current, &required, &natural));
    } else if (IsPartitionerCustomCall(original)) {
      const std::string& target = original.attributes.custom_call_target();
      if (target == "Sharding") {
        natural = wanted.has_value() ? *wanted : *current[0];
        required[0] = natural;
      } else if (target == "SPMDFullToShardShape") {
        natural = Replicated(original.shape);  // declared per shard already
      } else {  // SPMDShardToFullShape: the shard becomes a tiled global
        natural = wanted.has_value() ? *wanted : Replicated(original.shape);
      }
      ins.opcode = "bitcast";
      ins.attributes.mutable_custom_call_target()->clear();
      wanted.reset();
    } else if (!original.shape.is_tuple && n == 2 && !global[0]->is_tuple &&
               !global[1]->is_tuple &&
               (kind == OpKind::kDot || kind == OpKind::kReduce) &&
               (kind == OpKind::kReduce || DotDimsFit(original, global))) {
      PartialDims partial_dims;
      DimRule rule = kind == OpKind::kDot ? DotRule(original, global)
                                          : ReduceRule(original, global);
      if (kind == OpKind::kDot) {
        partial_dims = DotContraction(original);
      } else {
        partial_dims = ReduceDims(original, global);
      }
      Contract(rule, partial_dims, original, global, current, wanted, &required,
               &natural, &partial, &scatter_to);
    } else if (std::optional<DimRule> rule = RuleOf(original, kind, global);
               rule.has_value()) {
      Tiling target = wanted.has_value()
                          ? *wanted
                          : Propagate(*rule, original, global, current);
      Require(*rule, original, global, target, &required, &natural);
    } else {
      bool moved = wanted.has_value() &&
                   !SameTiling(*wanted, Replicated(original.shape));
      for (size_t k = 0; k < n; ++k) {
        required[k] = Replicated(*global[k]);
        moved |= !SameTiling(required[k], *current[k]);
      }
      natural = Replicated(original.shape);
      if (moved) ++unpartitioned_[opcode];
    }

    for (size_t k = 0; k < n; ++k) {
      if (!Fits(required[k], *global[k])) required[k] = Replicated(*global[k]);
      ins.operands[k] = Use(scope, old, original.operands[k], required[k], *at,
                            *tiling, deferred, original);
    }
    if (!Fits(natural, original.shape)) natural = Replicated(original.shape);
    if (scatter_to.has_value() && !Fits(*scatter_to, original.shape)) {
      scatter_to.reset();
    }
    ins.shape = ShardShape(original.shape, natural);
    FitAttributes(original, natural, &ins);
    const std::string name = ins.name;
    scope.out.push_back(std::move(ins));
    int32_t value = static_cast<int32_t>(scope.out.size()) - 1;
    if (partial > 1) {
      if (scatter_to.has_value()) {
        value = Emit(scope, "reduce-scatter",
                     ShardShape(original.shape, *scatter_to), {value}, name,
                     original, partial);
        natural = *scatter_to;
      } else {
        value = Emit(scope, "all-reduce", scope.out[value].shape, {value}, name,
                     original, partial);
      }
    }
    if (wanted.has_value()) {
      value = Reshard(scope, value, original.shape, natural, *wanted, original);
      natural = *wanted;
    }
    (*at)[i] = value;
    (*tiling)[i] = std::move(natural);
    return absl::OkStatus();
  }

  // Whether instruction `i` is such a value (its operands decided before).
  bool Defer(const std::vector<HloInstruction>& old, int32_t i,
             const std::vector<Tiling>& tiling, Deferred* deferred) const {
    const HloInstruction& ins = old[i];
    if (ins.shape.is_tuple || shardings_.contains(&ins)) return false;
    if (ins.operands.empty()) {
      deferred->is[i] = ins.opcode == "constant" || ins.opcode == "iota";
      deferred->depth[i] = 1;
      return deferred->is[i];
    }
    const OpKind kind = HloOpcodeToOpKind(ins.opcode);
    const bool broadcast = kind == OpKind::kBroadcast;
    if (!broadcast && ins.opcode != "reshape" && kind != OpKind::kTranspose &&
        kind != OpKind::kCopy &&
        OpKindCategory(kind) != OpCategory::kElementwise) {
      return false;
    }
    std::vector<const HloShape*> global;
    int32_t depth = 1;
    for (int32_t operand : ins.operands) {
      // A broadcast of a replicated value is made split as easily.
      const bool replicated =
          broadcast &&
          SameTiling(tiling[operand], Replicated(old[operand].shape));
      if (!deferred->is[operand] && !replicated) return false;
      depth = std::max(depth, deferred->depth[operand] + 1);
      global.push_back(&old[operand].shape);
    }
    if (depth > Deferred::kMaxDepth) return false;
    deferred->is[i] = RuleOf(ins, kind, global).has_value();
    deferred->depth[i] = depth;
    return deferred->is[i];
  }

  // Operand `operand` of `context` split as `required`: a deferred value
  // made so, or the value resharded.
  int32_t Use(Scope& scope, const std::vector<HloInstruction>& old,
              int32_t operand, const Tiling& required,
              const std::vector<int32_t>& at, const std::vector<Tiling>& tiling,
              Deferred* deferred, const HloInstruction& context) {
    if (deferred->is[operand]) {
      return Make(scope, old, operand, required, at, tiling, deferred);
    }
    return Reshard(scope, at[operand], old[operand].shape, tiling[operand],
                   required, context);
  }

  // Deferred value `i` split as `target` (made once per split; the first
  // keeps the instruction's name, the others are synthetic copies).
  int32_t Make(Scope& scope, const std::vector<HloInstruction>& old, int32_t i,
               const Tiling& target, const std::vector<int32_t>& at,
               const std::vector<Tiling>& tiling, Deferred* deferred) {
    for (const auto& [split, index] : deferred->made[i]) {
      if (SameTiling(split, target)) return index;
    }
    const HloInstruction& original = old[i];
    HloInstruction ins = original;
    const Tiling wanted =
        Fits(target, original.shape) ? target : Replicated(original.shape);
    Tiling natural = wanted;
    if (!original.operands.empty()) {
      std::vector<const HloShape*> global;
      for (int32_t operand : original.operands) {
        global.push_back(&old[operand].shape);
      }
      const OpKind kind = HloOpcodeToOpKind(original.opcode);
      std::vector<Tiling> required(global.size());
      Require(*RuleOf(original, kind, global), original, global, wanted,
              &required, &natural);
      for (size_t k = 0; k < global.size(); ++k) {
        ins.operands[k] = Use(scope, old, original.operands[k], required[k], at,
                              tiling, deferred, original);
      }
    }
    ins.shape = ShardShape(original.shape, natural);
    FitAttributes(original, natural, &ins);
    if (!deferred->made[i].empty()) {
      ins.name = UniqueName(scope, absl::StrCat(original.name, ".spmd.split"));
      ins.synthetic = true;
    }
    scope.out.push_back(std::move(ins));
    int32_t value = static_cast<int32_t>(scope.out.size()) - 1;
    value = Reshard(scope, value, original.shape, natural, target, original);
    deferred->made[i].emplace_back(target, value);
    return value;
  }

  // while (operand 0 feeds body and condition) and call (every operand
  // feeds the callee): each computation is partitioned once, with the
  // tilings its first caller passes; later callers reshard to them.
  absl::Status CallBodies(const std::vector<int32_t>& called,
                          const std::vector<int>& fed,
                          const std::vector<const Tiling*>& current,
                          std::vector<Tiling>* required, Tiling* natural) {
    const int32_t body = called[0];
    if (!done_[body]) {
      std::vector<Tiling> params;
      for (int k : fed) params.push_back(*current[k]);
      // A while body's result is its next iteration's parameter.
      const bool loop = called.size() == 2;
      RETURN_IF_ERROR(Partition(body, &params, loop ? &params[0] : nullptr));
      if (loop && !done_[called[1]]) {
        RETURN_IF_ERROR(Partition(called[1], &params, nullptr));
      }
    }
    for (size_t k = 0; k < fed.size() && k < params_[body].size(); ++k) {
      (*required)[fed[k]] = params_[body][k];
    }
    *natural = roots_[body];
    return absl::OkStatus();
  }

  // conditional: operand k + 1 feeds branch k; every branch returns what
  // the first does.
  absl::Status Branches(const HloInstruction& original,
                        const std::vector<const Tiling*>& current,
                        std::vector<Tiling>* required, Tiling* natural) {
    const std::vector<int32_t>& branches = original.called_computations;
    for (size_t b = 0; b < branches.size(); ++b) {
      const int32_t branch = branches[b];
      if (!done_[branch]) {
        std::vector<Tiling> params = {*current[b + 1]};
        RETURN_IF_ERROR(Partition(branch, &params,
                                  b == 0 ? nullptr : &roots_[branches[0]]));
      }
      if (!params_[branch].empty()) (*required)[b + 1] = params_[branch][0];
    }
    *natural = roots_[branches[0]];
    return absl::OkStatus();
  }

  // The pass-through rule of the ops that have one (nullopt: none).
  static std::optional<DimRule> RuleOf(const HloInstruction& ins, OpKind kind,
                                       const std::vector<const HloShape*>& g) {
    if (ins.shape.is_tuple) return std::nullopt;
    for (const HloShape* shape : g) {
      if (shape->is_tuple) return std::nullopt;
    }
    const size_t rank = ins.shape.dims.size();
    const OpAttributes& a = ins.attributes;
    DimRule rule;
    rule.operand_dim.assign(g.size(), std::vector<int>(rank, -1));
    auto identity = [&](size_t k, auto keep) {
      if (k >= g.size() || g[k]->dims.size() != rank) return;
      for (size_t o = 0; o < rank; ++o) {
        if (keep(o)) rule.operand_dim[k][o] = static_cast<int>(o);
      }
    };
    auto all = [](size_t) { return true; };
    const std::string& opcode = ins.opcode;
    switch (OpKindCategory(kind)) {
      case OpCategory::kElementwise:
        for (size_t k = 0; k < g.size(); ++k) identity(k, all);
        return rule;
      default:
        break;
    }
    if (kind == OpKind::kCopy) {
      identity(0, all);
    } else if (kind == OpKind::kTranspose) {
      if (a.dimensions.size() != rank || g.size() != 1 ||
          g[0]->dims.size() != rank) {
        return std::nullopt;
      }
      for (size_t o = 0; o < rank; ++o) {
        if (a.dimensions[o] < 0 ||
            a.dimensions[o] >= static_cast<int64_t>(rank))
          return std::nullopt;
        rule.operand_dim[0][o] = static_cast<int>(a.dimensions[o]);
      }
    } else if (kind == OpKind::kBroadcast) {
      rule.split_unfed = true;
      if (g.size() != 1 || a.dimensions.size() != g[0]->dims.size()) {
        return std::nullopt;
      }
      for (size_t i = 0; i < a.dimensions.size(); ++i) {
        if (a.dimensions[i] < 0 ||
            a.dimensions[i] >= static_cast<int64_t>(rank))
          return std::nullopt;
        rule.operand_dim[0][a.dimensions[i]] = static_cast<int>(i);
      }
    } else if (opcode == "reshape") {
      if (g.size() != 1) return std::nullopt;
      rule.divisible = true;
      const std::vector<int64_t>& in = g[0]->dims;
      const std::vector<int64_t>& out = ins.shape.dims;
      int64_t in_prefix = 1;
      size_t o = 0;
      int64_t out_prefix = 1;
      for (size_t d = 0; d < in.size(); ++d) {
        while (o < out.size() && out_prefix < in_prefix) out_prefix *= out[o++];
        if (o < out.size() && out_prefix == in_prefix) {
          rule.operand_dim[0][o] = static_cast<int>(d);
        }
        in_prefix *= in[d];
      }
    } else if (kind == OpKind::kSlice) {
      if (g.empty()) return std::nullopt;
      identity(0, [&](size_t o) {
        return a.slice_starts().size() == rank &&
               a.slice_limits().size() == rank &&
               a.slice_strides().size() == rank && a.slice_starts()[o] == 0 &&
               a.slice_limits()[o] == g[0]->dims[o] &&
               a.slice_strides()[o] == 1;
      });
    } else if (kind == OpKind::kPad) {
      if (g.empty()) return std::nullopt;
      identity(0, [&](size_t o) {
        return a.padding().size() == rank &&
               a.padding()[o] == PaddingDimension{};
      });
    } else if (kind == OpKind::kConcatenate) {
      if (a.dimensions.size() != 1) return std::nullopt;
      for (size_t k = 0; k < g.size(); ++k) {
        identity(k, [&](size_t o) {
          return static_cast<int64_t>(o) != a.dimensions[0];
        });
      }
    } else if (kind == OpKind::kReverse || kind == OpKind::kSort) {
      if (g.size() != 1) return std::nullopt;
      identity(0, [&](size_t o) {
        return std::find(a.dimensions.begin(), a.dimensions.end(),
                         static_cast<int64_t>(o)) == a.dimensions.end();
      });
    } else if (kind == OpKind::kDynamicSlice) {
      if (g.empty()) return std::nullopt;
      identity(0, [&](size_t o) {
        return a.dynamic_slice_sizes().size() == rank &&
               a.dynamic_slice_sizes()[o] == g[0]->dims[o];
      });
    } else if (kind == OpKind::kDynamicUpdateSlice) {
      if (g.size() < 2 || g[1]->dims.size() != rank) return std::nullopt;
      auto full = [&](size_t o) { return g[1]->dims[o] == g[0]->dims[o]; };
      identity(0, full);
      identity(1, full);
    } else if (kind == OpKind::kReduceWindow) {
      if (g.size() != 2 || a.window().size() != rank) return std::nullopt;
      identity(0, [&](size_t o) {
        const WindowDimension& w = a.window()[o];
        return w.size == 1 && w.stride == 1 && w.padding_low == 0 &&
               w.padding_high == 0 && w.base_dilation == 1;
      });
    } else if (kind == OpKind::kConvolution && a.has_convolution_dimensions &&
               g.size() == 2) {
      const ConvolutionDimensions& c = a.convolution();
      auto in = [](int64_t dim, size_t limit) {
        return dim >= 0 && dim < static_cast<int64_t>(limit);
      };
      if (!in(c.output_batch, rank) || !in(c.output_feature, rank) ||
          !in(c.input_batch, g[0]->dims.size()) ||
          !in(c.kernel_output_feature, g[1]->dims.size())) {
        return std::nullopt;
      }
      rule.operand_dim[0][c.output_batch] = static_cast<int>(c.input_batch);
      rule.operand_dim[1][c.output_feature] =
          static_cast<int>(c.kernel_output_feature);
    } else {
      return std::nullopt;
    }
    return rule;
  }

  // Whether a dot's dimension numbers name dimensions its operands have
  // (the lowering reports those that do not).
  static bool DotDimsFit(const HloInstruction& ins,
                         const std::vector<const HloShape*>& g) {
    const DotDimensions& d = ins.attributes.dot();
    auto fit = [](const std::vector<int64_t>& dims, const HloShape& shape) {
      for (int64_t dim : dims) {
        if (dim < 0 || dim >= static_cast<int64_t>(shape.dims.size())) {
          return false;
        }
      }
      return true;
    };
    return fit(d.lhs_batch, *g[0]) && fit(d.lhs_contracting, *g[0]) &&
           fit(d.rhs_batch, *g[1]) && fit(d.rhs_contracting, *g[1]);
  }

  // dot: batch dimensions from both operands, then lhs and rhs free ones.
  static DimRule DotRule(const HloInstruction& ins,
                         const std::vector<const HloShape*>& g) {
    const DotDimensions& d = ins.attributes.dot();
    DimRule rule;
    rule.operand_dim.assign(2, std::vector<int>(ins.shape.dims.size(), -1));
    size_t o = 0;
    for (size_t i = 0; i < d.lhs_batch.size() && o < ins.shape.dims.size();
         ++i, ++o) {
      rule.operand_dim[0][o] = static_cast<int>(d.lhs_batch[i]);
      if (i < d.rhs_batch.size()) {
        rule.operand_dim[1][o] = static_cast<int>(d.rhs_batch[i]);
      }
    }
    for (int side = 0; side < 2 && side < static_cast<int>(g.size()); ++side) {
      const std::vector<int64_t>& batch = side == 0 ? d.lhs_batch : d.rhs_batch;
      const std::vector<int64_t>& contracting =
          side == 0 ? d.lhs_contracting : d.rhs_contracting;
      for (size_t dim = 0; dim < g[side]->dims.size(); ++dim) {
        const int64_t x = static_cast<int64_t>(dim);
        if (std::find(batch.begin(), batch.end(), x) != batch.end() ||
            std::find(contracting.begin(), contracting.end(), x) !=
                contracting.end()) {
          continue;
        }
        if (o < ins.shape.dims.size()) {
          rule.operand_dim[side][o++] = static_cast<int>(dim);
        }
      }
    }
    return rule;
  }

  static PartialDims DotContraction(const HloInstruction& ins) {
    const DotDimensions& d = ins.attributes.dot();
    PartialDims partial;
    for (size_t j = 0; j < d.lhs_contracting.size(); ++j) {
      std::vector<std::pair<int, int>> pair = {
          {0, static_cast<int>(d.lhs_contracting[j])}};
      if (j < d.rhs_contracting.size()) {
        pair.emplace_back(1, static_cast<int>(d.rhs_contracting[j]));
      }
      partial.paired.push_back(std::move(pair));
    }
    return partial;
  }

  // reduce: the kept dimensions of operand 0, in order; init values
  // replicated.
  static DimRule ReduceRule(const HloInstruction& ins,
                            const std::vector<const HloShape*>& g) {
    DimRule rule;
    rule.operand_dim.assign(g.size(),
                            std::vector<int>(ins.shape.dims.size(), -1));
    size_t o = 0;
    for (size_t dim = 0; dim < g[0]->dims.size(); ++dim) {
      const std::vector<int64_t>& reduced = ins.attributes.dimensions;
      if (std::find(reduced.begin(), reduced.end(),
                    static_cast<int64_t>(dim)) != reduced.end()) {
        continue;
      }
      if (o < ins.shape.dims.size()) {
        rule.operand_dim[0][o++] = static_cast<int>(dim);
      }
    }
    return rule;
  }

  static PartialDims ReduceDims(const HloInstruction& ins,
                                const std::vector<const HloShape*>& g) {
    PartialDims partial;
    for (int64_t dim : ins.attributes.dimensions) {
      if (dim >= 0 && dim < static_cast<int64_t>(g[0]->dims.size())) {
        partial.paired.push_back({{0, static_cast<int>(dim)}});
      }
    }
    return partial;
  }

  // Whether `tiles` may split output dimension `o` of `ins` under `rule`.
  static bool Divides(const DimRule& rule, const HloInstruction& ins,
                      const std::vector<const HloShape*>& g, size_t o,
                      int64_t tiles) {
    if (!rule.divisible || tiles == 1) return true;
    const int d = rule.operand_dim[0][o];
    return ins.shape.dims[o] % tiles == 0 && d >= 0 &&
           g[0]->dims[d] % tiles == 0;
  }

  // An output tiling from the operands': each output dimension split as
  // the dimension it passes through is, in the operand split the most.
  Tiling Propagate(const DimRule& rule, const HloInstruction& ins,
                   const std::vector<const HloShape*>& g,
                   const std::vector<const Tiling*>& current) const {
    Tiling out = Replicated(ins.shape);
    int64_t best = 1;
    for (size_t k = 0; k < rule.operand_dim.size(); ++k) {
      Tiling candidate = Replicated(ins.shape);
      for (size_t o = 0; o < out.tiles.size(); ++o) {
        const int d = rule.operand_dim[k][o];
        if (d >= 0 && Divides(rule, ins, g, o, current[k]->tiles[d])) {
          candidate.tiles[o] = current[k]->tiles[d];
        }
      }
      if (Product(candidate.tiles) > best) {
        best = Product(candidate.tiles);
        out = std::move(candidate);
        if (candidate.tiles == current[k]->tiles) {
          out.devices = current[k]->devices;
        }
      }
    }
    return out;
  }

  // Operand tilings for an output split as `target`, and the output that
  // results (`target` on the dimensions the rule can split).
  void Require(const DimRule& rule, const HloInstruction& ins,
               const std::vector<const HloShape*>& g, const Tiling& target,
               std::vector<Tiling>* required, Tiling* natural) const {
    *natural = Replicated(ins.shape);
    for (size_t k = 0; k < required->size(); ++k) {
      (*required)[k] = Replicated(*g[k]);
    }
    for (size_t o = 0; o < natural->tiles.size(); ++o) {
      const int64_t t = target.tiles[o];
      if (t == 1 || !Divides(rule, ins, g, o, t)) continue;
      bool fed = false;
      for (size_t k = 0; k < rule.operand_dim.size(); ++k) {
        const int d = rule.operand_dim[k][o];
        if (d >= 0) {
          (*required)[k].tiles[d] = t;
          fed = true;
        }
      }
      if (fed || rule.split_unfed) natural->tiles[o] = t;
    }
    if (natural->tiles == target.tiles) natural->devices = target.devices;
    for (size_t k = 0; k < required->size(); ++k) {
      if ((*required)[k].tiles == natural->tiles) {
        (*required)[k].devices = natural->devices;
      }
    }
  }

  // dot and reduce: as Require, and the contracted (reduced) dimensions
  // stay split where the operands agree and the mesh has room, which makes
  // partial sums over `partial` devices; a result wanted split further by
  // exactly that group is reduce-scattered instead of all-reduced.
  void Contract(const DimRule& rule, const PartialDims& dims,
                const HloInstruction& ins,
                const std::vector<const HloShape*>& g,
                const std::vector<const Tiling*>& current,
                const std::optional<Tiling>& wanted,
                std::vector<Tiling>* required, Tiling* natural,
                int64_t* partial, std::optional<Tiling>* scatter_to) const {
    std::vector<int64_t> split(dims.paired.size(), 1);
    for (size_t j = 0; j < dims.paired.size(); ++j) {
      for (const auto& [k, d] : dims.paired[j]) {
        split[j] = std::max(split[j], current[k]->tiles[d]);
      }
    }
    const Tiling propagated = Propagate(rule, ins, g, current);
    Tiling target = wanted.has_value() ? *wanted : propagated;
    const int64_t mesh = result_.num_partitions;
    if (Product(propagated.tiles) * Product(split) > mesh) {
      split.assign(split.size(), 1);
    }
    if (wanted.has_value() && !SameTiling(*wanted, propagated) &&
        Product(split) > 1) {
      // Reduce-scatter: the wanted split refines the propagated one by the
      // partial group.
      bool refines = wanted->tiles.size() == propagated.tiles.size();
      for (size_t o = 0; refines && o < wanted->tiles.size(); ++o) {
        refines = wanted->tiles[o] % propagated.tiles[o] == 0;
      }
      if (refines && Product(wanted->tiles) ==
                         Product(propagated.tiles) * Product(split)) {
        *scatter_to = *wanted;
        target = propagated;
      } else if (Product(wanted->tiles) * Product(split) > mesh) {
        split.assign(split.size(), 1);
      }
    }
    Require(rule, ins, g, target, required, natural);
    for (size_t j = 0; j < dims.paired.size(); ++j) {
      for (const auto& [k, d] : dims.paired[j]) {
        (*required)[k].tiles[d] = split[j];
        (*required)[k].devices.clear();
      }
    }
    *partial = Product(split);
  }

  // Attributes that hold global extents: slices and dynamic slices of the
  // dimensions that pass through keep them whole, i.e. the shard.
  static void FitAttributes(const HloInstruction& original,
                            const Tiling& natural, HloInstruction* ins) {
    if (original.shape.is_tuple) return;
    const OpKind kind = HloOpcodeToOpKind(original.opcode);
    OpAttributes& a = ins->attributes;
    if (kind == OpKind::kSlice &&
        a.slice_limits().size() == ins->shape.dims.size()) {
      for (size_t o = 0; o < ins->shape.dims.size(); ++o) {
        if (natural.tiles[o] > 1)
          (*a.mutable_slice_limits())[o] = ins->shape.dims[o];
      }
    }
    if (kind == OpKind::kDynamicSlice &&
        a.dynamic_slice_sizes().size() == ins->shape.dims.size()) {
      for (size_t o = 0; o < ins->shape.dims.size(); ++o) {
        if (natural.tiles[o] > 1) {
          (*a.mutable_dynamic_slice_sizes())[o] = ins->shape.dims[o];
        }
      }
    }
  }

  HloModule& module_;
  SpmdPartitionResult& result_;
  bool already_partitioned_ = false;
  int depth_ = 0;
  absl::flat_hash_map<const HloInstruction*, HloSharding> shardings_;
  std::vector<uint8_t> done_;
  std::vector<std::vector<Tiling>> params_;
  std::vector<Tiling> roots_;
  std::map<std::string, int64_t> unpartitioned_;
};

}  // namespace

int64_t SpmdPartitionResult::collectives_inserted() const {
  int64_t total = 0;
  for (const auto& [opcode, count] : inserted) total += count;
  return total;
}

absl::StatusOr<SpmdPartitionResult> PartitionSpmdModule(HloModule* module) {
  SpmdPartitionResult result;
  if (module->entry < 0 ||
      module->entry >= static_cast<int32_t>(module->computations.size())) {
    return result;
  }
  RETURN_IF_ERROR(Partitioner(module, &result).Run());
  return result;
}

}  // namespace gopt::graph::hlo
