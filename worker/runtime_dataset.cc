#include "worker/runtime_dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/exporter.h"
#include "graph/native/graph_proto.h"
#include "nlohmann/json.hpp"
#include "util/status_macros.h"
#include "worker/diverse_plans.h"

namespace gopt::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kMeasurementsFile[] = "measurements.jsonl";

bool IdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool ValidId(const std::string& id) {
  if (id.empty() || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), IdChar);
}

std::string GraphPath(const std::string& dir, const std::string& id) {
  return (fs::path(dir) / "graphs" / (id + ".pb")).string();
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Writes the graph's file, or checks that the one there holds this graph.
absl::Status WriteGraph(const std::string& dir, const GraphToMeasure& g) {
  const std::string path = GraphPath(dir, g.id);
  const std::string bytes =
      graph::SerializeDeterministically(graph::GraphToProto(*g.graph));
  if (fs::exists(path)) {
    ASSIGN_OR_RETURN(std::string existing, ReadFileBytes(path));
    if (existing != bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph id '", g.id, "': '", path,
                       "' holds another graph (a dataset's ids name one "
                       "graph each; use a new id or a new directory)"));
    }
    return absl::OkStatus();
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write '", tmp, "'"));
    }
  }
  std::error_code error;
  fs::rename(tmp, path, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot rename '", tmp, "' to '", path, "': ", error.message()));
  }
  return absl::OkStatus();
}

json PlanLine(const MeasuredPlan& m) {
  json line;
  line["version"] = kRuntimeDatasetVersion;
  line["graph"] = m.graph_id;
  line["source"] = m.source;
  line["plan_name"] = m.plan_name;
  line["device"] = m.plan.device;
  line["priority"] = m.plan.priority;
  line["fusion_group"] = m.plan.fusion_group;
  line["measured_step_s"] = m.measured_step_s;
  line["measured_min_step_s"] = m.measured_min_step_s;
  line["spread"] = m.spread;
  line["runs"] = m.runs;
  line["executors"] = m.executors;
  line["node_s"] = m.node_seconds;
  return line;
}

// The (graph, plan) pairs already in the file; a torn last line (a run
// stopped mid-write) is ignored, so its plan is measured again.
std::set<std::pair<std::string, std::string>> PresentPlans(
    const std::string& path) {
  std::set<std::pair<std::string, std::string>> present;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object() || !line.contains("graph") ||
        !line.contains("plan_name")) {
      continue;
    }
    present.emplace(line.value("graph", ""), line.value("plan_name", ""));
  }
  return present;
}

}  // namespace

std::string GraphIdForFile(const std::string& path) {
  std::string id = fs::path(path).filename().string();
  for (char& c : id) {
    if (!IdChar(c)) c = '_';
  }
  return ValidId(id) ? id : "graph";
}

absl::StatusOr<CollectReport> CollectRuntimeData(
    Executor& executor, const simulator::Topology& topology,
    const std::vector<GraphToMeasure>& graphs, const CollectOptions& options) {
  std::set<std::string> ids;
  for (const GraphToMeasure& g : graphs) {
    if (!ValidId(g.id) || g.graph == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph id '", g.id,
                       "': expected a non-empty name of [A-Za-z0-9._-] "
                       "and a graph"));
    }
    if (!ids.insert(g.id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph id '", g.id, "' given twice"));
    }
  }
  std::error_code error;
  fs::create_directories(fs::path(options.dir) / "graphs", error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create '", options.dir, "/graphs': ", error.message()));
  }
  const std::string path = (fs::path(options.dir) / kMeasurementsFile).string();
  const std::set<std::pair<std::string, std::string>> present =
      PresentPlans(path);
  std::vector<std::vector<NamedPlan>> plans;
  int total = 0;
  for (const GraphToMeasure& g : graphs) {
    RETURN_IF_ERROR(WriteGraph(options.dir, g));
    ASSIGN_OR_RETURN(std::vector<NamedPlan> named,
                     DiversePlans(*g.graph, topology, options.seed,
                                  options.plans_per_graph));
    total += static_cast<int>(named.size());
    plans.push_back(std::move(named));
  }
  std::ofstream out(path, std::ios::app);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot append to '", path, "'"));
  }
  CollectReport report;
  ExecuteOptions execute = options.execute;
  execute.per_node_times = true;
  int done = 0;
  const int rounds = std::max(1, options.rounds);
  const int executors = static_cast<int>(executor.Describe().size());
  for (size_t i = 0; i < graphs.size(); ++i) {
    const GraphToMeasure& g = graphs[i];
    // Each plan of the graph measured once per round, the rounds one after
    // another, so that a disturbance (a burst of other load, a slow first
    // run of the graph) hits one round of a plan, not all of them; the
    // round with the lowest median is kept.
    std::vector<std::optional<ExecutionResult>> best(plans[i].size());
    std::vector<std::string> failed(plans[i].size());
    for (int round = 0; round < rounds; ++round) {
      for (size_t p = 0; p < plans[i].size(); ++p) {
        const NamedPlan& named = plans[i][p];
        ++done;
        std::string what = absl::StrCat(g.id, " ", named.name, ": ");
        if (present.count({g.id, named.name}) > 0) {
          absl::StrAppend(&what, "already measured");
        } else if (!failed[p].empty()) {
          absl::StrAppend(&what, "failed in an earlier round");
        } else {
          absl::StatusOr<ExecutionResult> result =
              executor.Execute(*g.graph, named.plan, execute);
          if (!result.ok()) {
            failed[p] = result.status().ToString();
            absl::StrAppend(&what, failed[p]);
          } else {
            absl::StrAppend(&what, result->measured_step_time_s * 1e3, " ms");
            if (!best[p].has_value() ||
                result->measured_step_time_s < best[p]->measured_step_time_s) {
              best[p] = *std::move(result);
            }
          }
        }
        if (options.progress) options.progress(done, total * rounds, what);
      }
    }
    for (size_t p = 0; p < plans[i].size(); ++p) {
      const NamedPlan& named = plans[i][p];
      if (present.count({g.id, named.name}) > 0) {
        ++report.plans_already_present;
        continue;
      }
      if (!failed[p].empty()) {
        report.failures.push_back(
            absl::StrCat(g.id, " ", named.name, ": ", failed[p]));
        continue;
      }
      MeasuredPlan m;
      m.graph_id = g.id;
      m.source = g.source;
      m.plan_name = named.name;
      m.plan = named.plan;
      m.measured_step_s = best[p]->measured_step_time_s;
      m.measured_min_step_s = best[p]->measured_min_step_time_s;
      m.spread = best[p]->measured_spread;
      m.runs = best[p]->runs;
      m.executors = executors;
      m.node_seconds = best[p]->per_node_seconds;
      out << PlanLine(m).dump() << "\n";
      if (!out.flush()) {
        return absl::PermissionDeniedError(
            absl::StrCat("cannot append to '", path, "'"));
      }
      ++report.plans_measured;
    }
  }
  return report;
}

absl::StatusOr<RuntimeDataset> ReadRuntimeDataset(const std::string& dir) {
  const std::string path = (fs::path(dir) / kMeasurementsFile).string();
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("no runtime dataset in '", dir, "' (", path,
                     " missing; gopt calibrate --learn writes one)"));
  }
  RuntimeDataset dataset;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.empty()) continue;
    const std::string where = absl::StrCat(path, ":", number);
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": not a JSON object"));
    }
    if (line.value("version", 0) != kRuntimeDatasetVersion) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected \"version\":", kRuntimeDatasetVersion));
    }
    MeasuredPlan m;
    try {
      m.graph_id = line.at("graph").get<std::string>();
      m.source = line.value("source", "");
      m.plan_name = line.at("plan_name").get<std::string>();
      m.plan.device = line.at("device").get<std::vector<int32_t>>();
      m.plan.priority = line.at("priority").get<std::vector<int32_t>>();
      m.plan.fusion_group = line.at("fusion_group").get<std::vector<int32_t>>();
      m.measured_step_s = line.at("measured_step_s").get<double>();
      m.measured_min_step_s = line.at("measured_min_step_s").get<double>();
      m.spread = line.at("spread").get<double>();
      m.runs = line.at("runs").get<int>();
      m.executors = line.at("executors").get<int>();
      m.node_seconds = line.at("node_s").get<std::vector<double>>();
    } catch (const json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
    }
    m.plan.method = m.plan_name;
    if (!ValidId(m.graph_id)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": bad graph id '", m.graph_id, "'"));
    }
    auto it = dataset.graphs.find(m.graph_id);
    if (it == dataset.graphs.end()) {
      const std::string graph_path = GraphPath(dir, m.graph_id);
      absl::StatusOr<std::string> bytes = ReadFileBytes(graph_path);
      if (!bytes.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": graph '", m.graph_id, "' has no file ", graph_path));
      }
      gopt::v1::Graph proto;
      if (!proto.ParseFromString(*bytes)) {
        return absl::InvalidArgumentError(
            absl::StrCat(graph_path, ": not a gopt.v1.Graph"));
      }
      absl::StatusOr<graph::Graph> graph =
          graph::GraphFromProto(proto, graph::GraphLimits{});
      if (!graph.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(graph_path, ": ", graph.status().message()));
      }
      it = dataset.graphs.emplace(m.graph_id, *std::move(graph)).first;
    }
    const size_t n = static_cast<size_t>(it->second.num_nodes());
    if (m.plan.device.size() != n || m.node_seconds.size() != n ||
        (!m.plan.priority.empty() && m.plan.priority.size() != n) ||
        (!m.plan.fusion_group.empty() && m.plan.fusion_group.size() != n)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": vectors must have graph '", m.graph_id, "''s ",
                       n, " nodes"));
    }
    dataset.plans.push_back(std::move(m));
  }
  return dataset;
}

}  // namespace gopt::worker
