// Prints where a GO network's zero-shot plan runs out of memory (issue 19):
// for each graph x machine, the greedy plan's nodes and peak memory per
// device, then the same plan with one decision replaced at a time (FIFO or
// critical-path priorities, no or greedy fusion, every node on one
// device), so that the overflow can be traced to the placement, the
// scheduling priorities or the fusion; and how many of the sampled plans
// fit.
//
// Also the running memory estimate of the memory-fitting decode
// (memory_fit.h), the plan that decode makes (ScoreActions), and the bytes
// each link carries.
//
//   gopt_zero_shot_memory_diagnostics --checkpoint=DIR/go-multitask.pt
//     --graph=../shared/data/hlo/efficientnet_jax_lambda256.hlo
//     --topologies=v100x4-nvlink

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/go/actions.h"
#include "policy/go/go_model.h"
#include "policy/go/memory_fit.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/baselines/schedulers.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "training/go/corpus.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, checkpoint, "", "the GO checkpoint (go-multitask.pt)");
ABSL_FLAG(std::vector<std::string>, graph, {}, "graphs (files or gen:PRESET)");
ABSL_FLAG(std::vector<std::string>, topologies, {"v100x4-nvlink"}, "machines");
ABSL_FLAG(int32_t, samples, 15, "sampled plans besides the greedy one");
ABSL_FLAG(uint64_t, seed, 0, "sampling seed (gopt bench's default)");

namespace go = gopt::policy::go;
namespace sim = gopt::simulator;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// One line: step time, OOM, nodes and peak GiB per device.
void PrintPlan(const char* what, const go::TrainingInstance& instance,
               const sim::Plan& plan) {
  absl::StatusOr<sim::SimulationResult> result =
      instance.simulator->Simulate(plan);
  if (!result.ok()) {
    std::printf("  %-34s error: %s\n", what,
                std::string(result.status().message()).c_str());
    return;
  }
  const int devices = instance.simulator->topology().num_devices();
  std::vector<int> nodes(devices, 0);
  for (int32_t d : plan.device) ++nodes[d];
  std::string per_device;
  for (int d = 0; d < devices; ++d) {
    absl::StrAppend(
        &per_device, " ", nodes[d], "/",
        absl::StrFormat("%.2f", result->peak_memory_bytes[d] / kGiB));
  }
  std::printf("  %-34s %10.3f ms %s  nodes/GiB:%s\n", what,
              result->step_time_s * 1e3, result->oom ? "OOM" : "fits",
              per_device.c_str());
}

// Bytes and busy time of every link the plan's transfers use.
absl::Status PrintTransfers(const go::TrainingInstance& instance,
                            const sim::Plan& plan) {
  absl::StatusOr<sim::SimulationResult> result =
      instance.simulator->Simulate(plan);
  if (!result.ok()) return result.status();
  std::map<std::pair<int32_t, int32_t>, std::pair<double, double>> links;
  for (const sim::TransferRecord& t : result->transfers) {
    std::pair<double, double>& link = links[{t.src_device, t.dst_device}];
    link.first += t.bytes / kGiB;
    link.second += t.end_s - t.start_s;
  }
  for (const auto& [ends, totals] : links) {
    std::printf("  link %d->%d: %.2f GiB in transfers, %.1f ms busy\n",
                ends.first, ends.second, totals.first, totals.second * 1e3);
  }
  return absl::OkStatus();
}

absl::Status Diagnose(const go::GoModel& model, const std::string& source,
                      const std::string& topology_name) {
  absl::StatusOr<gopt::graph::Graph> graph = go::LoadGraphSource(source);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<sim::Topology> topology = sim::LoadTopology(topology_name);
  if (!topology.ok()) return topology.status();
  auto shared_graph =
      std::make_shared<const gopt::graph::Graph>(*std::move(graph));
  auto shared_topology =
      std::make_shared<const sim::Topology>(*std::move(topology));
  absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
      go::MakeTrainingInstance(source, shared_graph, shared_topology);
  if (!instance.ok()) return instance.status();
  const go::TrainingInstance& in = **instance;
  std::printf("%s on %s: %d nodes; capacity GiB:", source.c_str(),
              topology_name.c_str(), shared_graph->num_nodes());
  for (const sim::DeviceProfile& device : shared_topology->devices) {
    std::printf(" %.1f", device.memory_bytes / kGiB);
  }
  std::printf("\n");
  absl::StatusOr<go::PolicyOutput> output =
      model.Run(in.features, gopt::policy::TaskSet{});
  if (!output.ok()) return output.status();
  const go::Actions greedy = go::SampleActions(*output, nullptr);
  absl::StatusOr<sim::Plan> plan =
      go::ActionsToPlan(*shared_graph, greedy, nullptr);
  if (!plan.ok()) return plan.status();
  PrintPlan("greedy decode", in, *plan);
  const go::PlacementMemoryFit fit(*shared_graph,
                                   shared_topology->num_devices());
  absl::StatusOr<std::vector<int64_t>> estimate =
      fit.EstimatePeakBytes(plan->device);
  if (!estimate.ok()) return estimate.status();
  std::printf("  %-34s", "running estimate, GiB:");
  for (int64_t bytes : *estimate) std::printf(" %.3f", bytes / kGiB);
  std::printf("\n");
  RETURN_IF_ERROR(PrintTransfers(in, *plan));
  const go::ScoredPlan fitted = go::ScoreActions(in, greedy);
  PrintPlan("memory-fitting decode", in, fitted.plan);

  sim::RooflineCostModel cost_model;
  const sim::baselines::BaselineContext context{*shared_graph, *shared_topology,
                                                cost_model, 0};
  sim::Plan variant = *plan;
  variant.priority.clear();
  PrintPlan("same, fifo priorities", in, variant);
  absl::StatusOr<std::vector<int32_t>> critical =
      sim::baselines::CriticalPathScheduler().Schedule(context, plan->device);
  if (!critical.ok()) return critical.status();
  variant.priority = *critical;
  PrintPlan("same, critical-path priorities", in, variant);
  variant = *plan;
  variant.fusion_group.clear();
  PrintPlan("same, no fusion", in, variant);
  absl::StatusOr<std::vector<int32_t>> fused =
      sim::baselines::GreedyFusionGroups(*shared_graph, plan->device, nullptr);
  if (!fused.ok()) return fused.status();
  variant.fusion_group = *fused;
  PrintPlan("same, greedy fusion", in, variant);
  for (int32_t target = 0; target < shared_topology->num_devices(); ++target) {
    go::Actions single = greedy;
    single.device.assign(single.device.size(), target);
    absl::StatusOr<sim::Plan> one =
        go::ActionsToPlan(*shared_graph, single, nullptr);
    if (!one.ok()) return one.status();
    PrintPlan(
        absl::StrCat("all on device ", target, ", go prio+fusion").c_str(), in,
        *one);
    if (target > 0) continue;
    absl::StatusOr<std::vector<int64_t>> single_estimate =
        fit.EstimatePeakBytes(one->device);
    if (!single_estimate.ok()) return single_estimate.status();
    std::printf("  %-34s %.3f\n",
                "running estimate, GiB:", (*single_estimate)[0] / kGiB);
  }
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  int fits = 0;
  int fits_fitted = 0;
  const int samples = absl::GetFlag(FLAGS_samples);
  for (int s = 0; s < samples; ++s) {
    const go::Actions sampled = go::SampleActions(*output, &rng);
    absl::StatusOr<sim::Plan> sampled_plan =
        go::ActionsToPlan(*shared_graph, sampled, nullptr);
    if (!sampled_plan.ok()) return sampled_plan.status();
    const go::ScoredPlan plain = go::ScorePlan(in, *std::move(sampled_plan));
    if (plain.valid && !plain.oom) ++fits;
    const go::ScoredPlan scored = go::ScoreActions(in, sampled);
    if (scored.valid && !scored.oom) ++fits_fitted;
  }
  std::printf(
      "  sampled plans that fit: %d of %d; with the memory-fitting decode "
      "%d\n",
      fits, samples, fits_fitted);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  go::SetTorchThreads(1);
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      go::GoModel::Load(absl::GetFlag(FLAGS_checkpoint));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    for (const std::string& topology : absl::GetFlag(FLAGS_topologies)) {
      absl::Status status = Diagnose(**model, source, topology);
      if (!status.ok()) {
        std::fprintf(stderr, "%s on %s: %s\n", source.c_str(), topology.c_str(),
                     std::string(status.message()).c_str());
        return 1;
      }
    }
  }
  return 0;
}
