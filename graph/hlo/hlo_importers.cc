#include "graph/hlo/hlo_importers.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/gopt_export_restore.h"
#include "graph/hlo/hlo_lowering.h"
#include "graph/hlo/hlo_proto_reader.h"
#include "graph/hlo/hlo_text_parser.h"
#include "graph/hlo/spmd_partitioner.h"
#include "graph/hlo/tuning_data.h"
#include "graph/op_catalog.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

hlo::HloLoweringOptions LoweringOptions(const ImportOptions& options,
                                        absl::string_view format) {
  hlo::HloLoweringOptions lowering;
  lowering.format = std::string(format);
  lowering.limits = options.limits;
  return lowering;
}

// An SPMD module becomes the program one device runs (PartitionSpmdModule),
// then a graph that says so: SpmdProgram, and a warning the response and
// `gopt inspect` show.
absl::StatusOr<Graph> LowerSpmdAware(hlo::HloModule module,
                                     hlo::HloLoweringOptions lowering) {
  ASSIGN_OR_RETURN(hlo::SpmdPartitionResult spmd,
                   hlo::PartitionSpmdModule(&module));
  if (spmd.spmd && spmd.num_partitions > 1) {
    lowering.spmd.num_partitions = spmd.num_partitions;
    lowering.spmd.collectives_inserted = spmd.collectives_inserted();
    lowering.spmd.partitioned_by_importer = spmd.partitioned;
    std::vector<std::string> inserted;
    for (const auto& [opcode, count] : spmd.inserted) {
      inserted.push_back(absl::StrCat(count, " ", opcode));
    }
    module.warnings.push_back(absl::StrCat(
        "SPMD: shardings honoured: the graph is one device's program of ",
        spmd.num_partitions, " partitions",
        spmd.partitioned
            ? absl::StrCat(" (ops costed on their shards; ",
                           spmd.collectives_inserted(), " collectives inserted",
                           inserted.empty() ? "" : ": ",
                           absl::StrJoin(inserted, ", "), ")")
            : " (partitioned already: per-device shapes as written)",
        "; collectives priced on the mesh's links; placement is fixed by "
        "the sharding"));
  }
  for (std::string& warning : spmd.warnings) {
    module.warnings.push_back(std::move(warning));
  }
  return hlo::LowerHloModule(module, lowering);
}

class HloTextImporter final : public Importer {
 public:
  absl::string_view format() const override { return "hlo"; }

  bool Sniff(absl::string_view contents) const override {
    return hlo::LooksLikeHloText(contents);
  }

  // Every instruction line holds " = "; the parser builds an instruction
  // record per line.
  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    return TextParseCost(contents, " = ", kImporterBytesPerNode, limits);
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    ASSIGN_OR_RETURN(hlo::HloModule module, hlo::ParseHloText(contents));
    RETURN_IF_ERROR(hlo::RestoreGoptExport(&module));
    return LowerSpmdAware(std::move(module),
                          LoweringOptions(options, format()));
  }
};

class HloProtoImporter final : public Importer {
 public:
  absl::string_view format() const override { return "hlo-proto"; }

  bool Sniff(absl::string_view contents) const override {
    return hlo::LooksLikeHloModuleProto(contents);
  }

  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    return hlo::HloModuleProtoParseCost(contents, limits);
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    ASSIGN_OR_RETURN(hlo::HloModule module, hlo::ParseHloModuleProto(contents));
    RETURN_IF_ERROR(hlo::RestoreGoptExport(&module));
    return LowerSpmdAware(std::move(module),
                          LoweringOptions(options, format()));
  }
};

class TpuGraphsImporter final : public Importer {
 public:
  absl::string_view format() const override { return "tpugraphs"; }

  bool Sniff(absl::string_view contents) const override {
    return hlo::LooksLikeTuningData(contents);
  }

  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    return hlo::TuningDataParseCost(contents, limits);
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    ASSIGN_OR_RETURN(hlo::TuningDataset dataset,
                     hlo::ReadTuningData(contents, options));
    if (dataset.modules.size() == 1) {
      return std::move(dataset.modules[0].graph);
    }
    GraphBuilder builder(options.source_name, std::string(format()));
    absl::flat_hash_set<std::string> names;
    for (size_t m = 0; m < dataset.modules.size(); ++m) {
      hlo::TuningModule& module = dataset.modules[m];
      auto graph = std::make_shared<const Graph>(std::move(module.graph));
      Node node;
      node.name = module.name;
      if (!names.insert(node.name).second) {
        node.name = absl::StrCat(module.name, "#", m);
        names.insert(node.name);
      }
      node.op = "module";
      node.kind = OpKind::kCall;
      const Graph* bodies[] = {graph.get()};
      SetNodeCost(SubgraphCost(bodies, 1), &node);
      node.subgraphs = {builder.AddSubgraph(std::move(graph))};
      builder.AddNode(std::move(node));
    }
    return std::move(builder).Build(options.limits);
  }
};

}  // namespace

std::unique_ptr<Importer> NewHloTextImporter() {
  return std::make_unique<HloTextImporter>();
}

std::unique_ptr<Importer> NewHloProtoImporter() {
  return std::make_unique<HloProtoImporter>();
}

std::unique_ptr<Importer> NewTpuGraphsImporter() {
  return std::make_unique<TpuGraphsImporter>();
}

}  // namespace gopt::graph
