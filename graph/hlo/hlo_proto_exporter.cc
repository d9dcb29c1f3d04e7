#include "graph/hlo/hlo_proto_exporter.h"

#include <climits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_decisions.h"
#include "graph/hlo/hlo_proto_fusion.h"
#include "graph/hlo/hlo_proto_reader.h"
#include "graph/hlo/hlo_schedule.h"
#include "util/status_macros.h"
#include "xla/hlo.pb.h"

namespace gopt::graph {
namespace {

absl::StatusOr<xla::HloModuleProto> ParseModule(absl::string_view bytes) {
  xla::HloModuleProto module;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !module.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        "not a valid serialized xla.HloModuleProto");
  }
  return module;
}

bool IsArrayShape(const xla::ShapeProto& shape) {
  return shape.element_type() != xla::TUPLE &&
         shape.element_type() != xla::TOKEN &&
         shape.element_type() != xla::OPAQUE_TYPE &&
         shape.element_type() != xla::PRIMITIVE_TYPE_INVALID;
}

// The ids of the computations that fusion instructions call (XLA schedules
// every other computation).
absl::flat_hash_set<int64_t> FusedComputationIds(
    const xla::HloModuleProto& module) {
  absl::flat_hash_set<int64_t> fused;
  for (const xla::HloComputationProto& computation : module.computations()) {
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      if (instruction.opcode() == "fusion") {
        fused.insert(instruction.called_computation_ids().begin(),
                     instruction.called_computation_ids().end());
      }
    }
  }
  return fused;
}

// The position of every instruction of `module` (ExportPositions per
// computation).
HloPositions OriginalPositions(const xla::HloModuleProto& module) {
  HloPositions positions;
  for (const xla::HloComputationProto& computation : module.computations()) {
    std::vector<int32_t> marked;
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      const auto& attributes = instruction.frontend_attributes().map();
      auto it = attributes.find(std::string(kHloOrderAttribute));
      int32_t position = -1;
      if (it == attributes.end() || !absl::SimpleAtoi(it->second, &position) ||
          position < 0) {
        position = -1;
      }
      marked.push_back(position);
    }
    const std::vector<int32_t> order = ExportPositions(marked);
    for (int i = 0; i < computation.instructions_size(); ++i) {
      positions[{computation.name(), computation.instructions(i).name()}] =
          order[i];
    }
  }
  return positions;
}

// Sets _gopt_order on `instruction` of `computation` when it has a
// position.
void MarkPosition(const HloPositions& positions, const std::string& computation,
                  xla::HloInstructionProto* instruction) {
  auto it = positions.find({computation, instruction->name()});
  if (it == positions.end()) return;
  (*instruction->mutable_frontend_attributes()
        ->mutable_map())[std::string(kHloOrderAttribute)] =
      absl::StrCat(it->second);
}

// Marks every instruction of each computation the fusions reordered.
void MarkMovedInstructions(const HloPositions& positions,
                           xla::HloModuleProto* module) {
  for (xla::HloComputationProto& computation :
       *module->mutable_computations()) {
    std::vector<std::string> names;
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      names.push_back(instruction.name());
    }
    if (!MovedByExport(computation.name(), names, positions)) continue;
    for (xla::HloInstructionProto& instruction :
         *computation.mutable_instructions()) {
      MarkPosition(positions, computation.name(), &instruction);
    }
  }
}

// Writes decision `d` into `instruction`: sharding, frontend attributes and
// the layout of an array shape.
void ApplyDecision(const HloDecision& d,
                   xla::HloInstructionProto* instruction) {
  xla::OpSharding& sharding = *instruction->mutable_sharding();
  sharding.Clear();
  sharding.set_type(xla::OpSharding::MAXIMAL);
  sharding.add_tile_assignment_dimensions(1);
  sharding.add_tile_assignment_devices(d.device);
  auto& attributes = *instruction->mutable_frontend_attributes()->mutable_map();
  attributes[std::string(kHloPriorityAttribute)] = absl::StrCat(d.priority);
  if (d.kernel >= 0) {
    attributes[std::string(kHloKernelAttribute)] = absl::StrCat(d.kernel);
  } else {
    attributes.erase(std::string(kHloKernelAttribute));
  }
  if (!d.layout.empty() && IsArrayShape(instruction->shape())) {
    auto& minor_to_major = *instruction->mutable_shape()
                                ->mutable_layout()
                                ->mutable_minor_to_major();
    minor_to_major.Assign(d.layout.begin(), d.layout.end());
    attributes[std::string(kHloLayoutAttribute)] =
        LayoutAttributeValue(d.layout);
  } else {
    attributes.erase(std::string(kHloLayoutAttribute));
  }
}

// Applies `decisions` to every instruction they name, with its position;
// returns each computation's priorities by instruction index.
std::vector<std::vector<int32_t>> ApplyDecisions(const HloDecisions& decisions,
                                                 const HloPositions& positions,
                                                 xla::HloModuleProto* module) {
  std::vector<std::vector<int32_t>> priorities;
  for (xla::HloComputationProto& computation :
       *module->mutable_computations()) {
    std::vector<int32_t>& priority =
        priorities.emplace_back(computation.instructions_size(), 0);
    for (int i = 0; i < computation.instructions_size(); ++i) {
      xla::HloInstructionProto& instruction =
          *computation.mutable_instructions(i);
      auto it = decisions.find({computation.name(), instruction.name()});
      if (it == decisions.end()) continue;
      priority[i] = it->second.priority;
      ApplyDecision(it->second, &instruction);
      MarkPosition(positions, computation.name(), &instruction);
    }
  }
  return priorities;
}

class HloProtoExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "hlo-proto"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan,
      const ExportOptions& /*options*/) const override {
    ASSIGN_OR_RETURN(xla::HloModuleProto module, ParseModule(original));
    HloDecisions decisions = HloDecisionsOf(graph, plan);
    const HloPositions positions = OriginalPositions(module);
    // Decided shapes and attributes first, so that the fused computations
    // and fusions carry them (the members their own, with their positions);
    // then once more for the instructions the fusions added (applying a
    // decision twice changes nothing).
    ApplyDecisions(decisions, positions, &module);
    HloProtoFusion fusion = WriteProtoFusions(&module, &decisions);
    const std::vector<std::vector<int32_t>> priorities =
        ApplyDecisions(decisions, positions, &module);
    MarkMovedInstructions(positions, &module);
    const absl::flat_hash_set<int64_t> fused = FusedComputationIds(module);
    xla::HloScheduleProto schedule;
    for (int c = 0; c < module.computations_size(); ++c) {
      const xla::HloComputationProto& computation = module.computations(c);
      if (fused.contains(computation.id())) continue;
      std::vector<int64_t> order =
          ScheduleOfComputation(computation, priorities[c]);
      if (static_cast<int>(order.size()) != computation.instructions_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "computation '", computation.name(),
            "': operand_ids and control_predecessor_ids form a cycle; "
            "no schedule exists"));
      }
      auto& sequence = (*schedule.mutable_sequences())[computation.id()];
      sequence.mutable_instruction_ids()->Assign(order.begin(), order.end());
    }
    *module.mutable_schedule() = std::move(schedule);
    ExportResult result;
    result.contents = SerializeDeterministically(module);
    result.warnings = std::move(fusion.warnings);
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    ASSIGN_OR_RETURN(const xla::HloModuleProto module, ParseModule(contents));
    HloDecisions decisions;
    for (const xla::HloComputationProto& computation : module.computations()) {
      for (const xla::HloInstructionProto& instruction :
           computation.instructions()) {
        const auto& attributes = instruction.frontend_attributes().map();
        auto priority = attributes.find(std::string(kHloPriorityAttribute));
        if (priority == attributes.end()) continue;
        const std::string what =
            absl::StrCat("computation '", computation.name(), "' instruction '",
                         instruction.name(), "'");
        HloDecision d;
        ASSIGN_OR_RETURN(
            d.priority,
            ParseDecisionInt(priority->second,
                             absl::StrCat(what, " frontend attribute ",
                                          kHloPriorityAttribute)));
        if (auto kernel = attributes.find(std::string(kHloKernelAttribute));
            kernel != attributes.end()) {
          ASSIGN_OR_RETURN(
              d.kernel,
              ParseDecisionInt(kernel->second,
                               absl::StrCat(what, " frontend attribute ",
                                            kHloKernelAttribute)));
        }
        const xla::OpSharding& sharding = instruction.sharding();
        if (sharding.type() != xla::OpSharding::MAXIMAL ||
            sharding.tile_assignment_devices_size() != 1 ||
            sharding.tile_assignment_devices(0) < 0 ||
            (!devices.empty() && sharding.tile_assignment_devices(0) >=
                                     static_cast<int64_t>(devices.size()))) {
          return absl::InvalidArgumentError(absl::StrCat(
              what,
              " field 'sharding': expected OpSharding MAXIMAL on one device "
              "< ",
              devices.size()));
        }
        d.device = static_cast<int32_t>(sharding.tile_assignment_devices(0));
        if (auto layout = attributes.find(std::string(kHloLayoutAttribute));
            layout != attributes.end()) {
          const xla::ShapeProto& shape = instruction.shape();
          if (!IsArrayShape(shape)) {
            return absl::InvalidArgumentError(
                absl::StrCat(what, " frontend attribute ", kHloLayoutAttribute,
                             ": the instruction's shape is not an array"));
          }
          ASSIGN_OR_RETURN(
              d.layout,
              ReadLayoutDecision(
                  layout->second,
                  std::vector<int32_t>(shape.layout().minor_to_major().begin(),
                                       shape.layout().minor_to_major().end()),
                  shape.dimensions_size(), what));
        }
        decisions[{computation.name(), instruction.name()}] = std::move(d);
      }
    }
    if (decisions.empty()) return std::nullopt;
    ASSIGN_OR_RETURN(const hlo::HloModule restored,
                     hlo::ParseHloModuleProto(contents));
    RekeyFusedDecisions(restored, &decisions);
    return PlanFromHloDecisions(graph, decisions, "embedded:hlo-proto");
  }
};

}  // namespace

std::unique_ptr<Exporter> NewHloProtoExporter() {
  return std::make_unique<HloProtoExporter>();
}

}  // namespace gopt::graph
