#include "worker/runtime_dataset.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/generators/generators.h"
#include "simulator/plan.h"
#include "worker/diverse_plans.h"

namespace gopt::worker {
namespace {

using ::testing::HasSubstr;

graph::Graph TinyGraph(int hidden = 16) {
  simulator::generators::GeneratorOptions options;
  options.family = "rnnlm";
  options.layers = 1;
  options.batch = 2;
  options.seq = 2;
  options.hidden = hidden;
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : graph::Graph();
}

std::unique_ptr<Executor> TwoCpuExecutors() {
  ExecutorOptions options;
  options.cpu_executors = 2;
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Executor::Create(options);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

// A fresh directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  return dir.string();
}

CollectOptions OneQuickRun(const std::string& dir, int plans) {
  CollectOptions options;
  options.dir = dir;
  options.plans_per_graph = plans;
  options.execute.warmup_runs = 0;
  options.execute.min_repeats = 1;
  options.execute.max_repeats = 1;
  options.execute.min_measure_seconds = 0;
  return options;
}

TEST(DiversePlansTest, TwentyValidDistinctPlansThatPlaceOrderAndFuse) {
  const graph::Graph graph = TinyGraph();
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("cpu-host");
  ASSERT_TRUE(topology.ok());
  absl::StatusOr<std::vector<NamedPlan>> plans =
      DiversePlans(graph, *topology, /*seed=*/1);
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 20u);
  std::set<std::string> names;
  int split = 0, prioritized = 0, fused = 0;
  for (const NamedPlan& p : *plans) {
    names.insert(p.name);
    EXPECT_TRUE(simulator::ValidatePlan(p.plan, graph, *topology).ok())
        << p.name;
    std::set<int32_t> devices(p.plan.device.begin(), p.plan.device.end());
    split += devices.size() > 1;
    prioritized += !p.plan.priority.empty();
    for (int32_t g : p.plan.fusion_group) {
      if (g >= 0) {
        ++fused;
        break;
      }
    }
  }
  EXPECT_EQ(names.size(), plans->size());
  EXPECT_GE(split, 10);
  EXPECT_EQ(prioritized, 6);  // 5 with priorities + the fused one of them
  EXPECT_EQ(fused, 3);
  absl::StatusOr<std::vector<NamedPlan>> again =
      DiversePlans(graph, *topology, /*seed=*/1);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < plans->size(); ++i) {
    EXPECT_EQ((*again)[i].plan.device, (*plans)[i].plan.device);
    EXPECT_EQ((*again)[i].plan.priority, (*plans)[i].plan.priority);
  }
  absl::StatusOr<std::vector<NamedPlan>> five =
      DiversePlans(graph, *topology, /*seed=*/1, /*max_plans=*/5);
  ASSERT_TRUE(five.ok());
  EXPECT_EQ(five->size(), 5u);
}

TEST(CollectRuntimeDataTest, MeasuresWritesReadsBackAndResumes) {
  const graph::Graph graph = TinyGraph();
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const std::string dir = FreshDir("collect_resume");
  const CollectOptions options = OneQuickRun(dir, /*plans=*/3);
  absl::StatusOr<CollectReport> report =
      CollectRuntimeData(*executor, executor->HostTopology(),
                         {{"tiny", "generate:rnnlm", &graph}}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->plans_measured, 3);
  EXPECT_TRUE(report->failures.empty());

  absl::StatusOr<CollectReport> again =
      CollectRuntimeData(*executor, executor->HostTopology(),
                         {{"tiny", "generate:rnnlm", &graph}}, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->plans_measured, 0);
  EXPECT_EQ(again->plans_already_present, 3);

  absl::StatusOr<RuntimeDataset> dataset = ReadRuntimeDataset(dir);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->graphs.count("tiny"), 1u);
  EXPECT_EQ(dataset->graphs.at("tiny").num_nodes(), graph.num_nodes());
  ASSERT_EQ(dataset->plans.size(), 3u);
  const MeasuredPlan& first = dataset->plans[0];
  EXPECT_EQ(first.plan_name, "default");
  EXPECT_EQ(first.source, "generate:rnnlm");
  EXPECT_EQ(first.executors, 2);
  EXPECT_GT(first.measured_step_s, 0);
  ASSERT_EQ(first.node_seconds.size(), static_cast<size_t>(graph.num_nodes()));
  double timed = 0;
  for (double s : first.node_seconds) timed += s;
  EXPECT_GT(timed, 0);
}

TEST(CollectRuntimeDataTest, ATornLastLineIsMeasuredAgain) {
  const graph::Graph graph = TinyGraph();
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const std::string dir = FreshDir("collect_torn");
  const CollectOptions options = OneQuickRun(dir, /*plans=*/1);
  ASSERT_TRUE(CollectRuntimeData(*executor, executor->HostTopology(),
                                 {{"tiny", "", &graph}}, options)
                  .ok());
  // A run stopped mid-line leaves half a JSON object.
  const std::string path = dir + "/measurements.jsonl";
  std::string text;
  {
    std::ifstream in(path);
    std::getline(in, text);
  }
  {
    std::ofstream out(path, std::ios::trunc);
    out << text.substr(0, text.size() / 2);
  }
  absl::StatusOr<CollectReport> report = CollectRuntimeData(
      *executor, executor->HostTopology(), {{"tiny", "", &graph}}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->plans_measured, 1);
  // The reader names the torn line.
  EXPECT_THAT(ReadRuntimeDataset(dir).status().message(),
              HasSubstr("measurements.jsonl:1"));
}

TEST(CollectRuntimeDataTest, BadIdsAndAnotherGraphUnderAnIdAreRefused) {
  const graph::Graph graph = TinyGraph();
  const graph::Graph other = TinyGraph(/*hidden=*/24);
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const std::string dir = FreshDir("collect_ids");
  const CollectOptions options = OneQuickRun(dir, /*plans=*/1);
  EXPECT_THAT(CollectRuntimeData(*executor, executor->HostTopology(),
                                 {{"a/b", "", &graph}}, options)
                  .status()
                  .message(),
              HasSubstr("A-Za-z0-9"));
  EXPECT_THAT(
      CollectRuntimeData(*executor, executor->HostTopology(),
                         {{"a", "", &graph}, {"a", "", &graph}}, options)
          .status()
          .message(),
      HasSubstr("given twice"));
  ASSERT_TRUE(CollectRuntimeData(*executor, executor->HostTopology(),
                                 {{"a", "", &graph}}, options)
                  .ok());
  EXPECT_THAT(CollectRuntimeData(*executor, executor->HostTopology(),
                                 {{"a", "", &other}}, options)
                  .status()
                  .message(),
              HasSubstr("holds another graph"));
}

TEST(GraphIdForFileTest, KeepsTheFileNameWithSafeCharacters) {
  EXPECT_EQ(GraphIdForFile("/data/onnx/light squeezenet.onnx"),
            "light_squeezenet.onnx");
  EXPECT_EQ(GraphIdForFile("kws_DS_CNN_S.pb"), "kws_DS_CNN_S.pb");
  EXPECT_EQ(GraphIdForFile("/x/.."), "graph");
}

TEST(ReadRuntimeDatasetTest, ErrorsNameTheFileAndLine) {
  const std::string dir = FreshDir("read_errors");
  EXPECT_EQ(ReadRuntimeDataset(dir).status().code(),
            absl::StatusCode::kNotFound);
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir + "/measurements.jsonl");
    out << R"({"version":2,"graph":"g"})"
        << "\n";
  }
  EXPECT_THAT(ReadRuntimeDataset(dir).status().message(),
              HasSubstr("measurements.jsonl:1: expected \"version\":1"));
  {
    std::ofstream out(dir + "/measurements.jsonl", std::ios::trunc);
    out << R"({"version":1,"graph":"g","plan_name":"p","device":[0],)"
        << R"("priority":[],"fusion_group":[],"measured_step_s":1,)"
        << R"("measured_min_step_s":1,"spread":0,"runs":1,"executors":1,)"
        << R"("node_s":[0.1]})"
        << "\n";
  }
  EXPECT_THAT(ReadRuntimeDataset(dir).status().message(),
              HasSubstr("graph 'g' has no file"));
}

}  // namespace
}  // namespace gopt::worker
