// Prints what expert iteration's supervision looks like on held-out and
// random training instances (issue 19's v3 regression): per instance the
// search target against the best baseline, how many of the network's greedy
// devices match the target's (canonically relabelled to the greedy
// placement, as expert iteration does), whether the relabelled target still
// simulates to the searched step time (it must: relabelling only swaps
// interchangeable devices), and the supervised losses on the held-out
// targets before and after --train_rounds rounds of expert iteration on the
// training instances. Per instance also the co-location decodes with the
// network's, the target's and all-zero co-location logits, and how well
// co-location rankings predict the target's cuts between two kernels (AUC):
// the head's, a second search's (another seed), the best baseline's and
// the HEFT and METIS hints'.
//
//   gopt_expert_diagnostics --checkpoint=policy/pretrained/go-multitask-v2/
//     go-multitask.pt --graph=gen:transformer_xl-small --train_rounds=8

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "policy/go/co_location_decode.h"
#include "policy/go/go_model.h"
#include "policy/go/network.h"
#include "policy/go/plan_search.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/topology.h"
#include "training/go/corpus.h"
#include "training/go/distillation.h"
#include "training/go/expert_iteration.h"
#include "training/go/random_corpus.h"

ABSL_FLAG(std::string, checkpoint,
          "policy/pretrained/go-multitask-v2/go-multitask.pt",
          "the GO checkpoint to start from (empty: a fresh network)");
ABSL_FLAG(std::vector<std::string>, graph, {"gen:transformer_xl-small"},
          "held-out graphs (files or gen:PRESET)");
ABSL_FLAG(std::vector<std::string>, topologies, {"v100x4-nvlink"},
          "held-out machines");
ABSL_FLAG(int32_t, random_graphs, 6, "random training graphs");
ABSL_FLAG(int32_t, random_topologies, 4, "random training machines");
ABSL_FLAG(int32_t, max_nodes, 300, "largest random training graph");
ABSL_FLAG(int32_t, train_rounds, 8, "expert-iteration rounds between checks");
ABSL_FLAG(int32_t, search_rounds, 4, "plan-search rounds per start");
ABSL_FLAG(int32_t, ppo_steps, 0, "PPO updates per training round");
ABSL_FLAG(bool, relabel_to_greedy, true,
          "match targets' symmetric devices to the greedy placement (else "
          "first use)");
ABSL_FLAG(bool, co_location_loss, false,
          "train and measure placement with the co-location loss");
ABSL_FLAG(uint64_t, seed, 1, "seed");

namespace go = gopt::policy::go;

namespace {

constexpr gopt::policy::TaskSet kAllTasks{true, true, true, false};

struct Held {
  std::unique_ptr<go::TrainingInstance> instance;
  go::ScoredPlan baseline;
  go::ScoredPlan best;  // searched from the baseline and the greedy plan
};

go::ScoredPlan Search(const go::TrainingInstance& instance,
                      go::ScoredPlan start, const go::PolicyOutput* guide,
                      uint64_t seed) {
  go::PlanSearchOptions options;
  options.seed = seed;
  options.threads = 1;
  go::PlanSearch search(instance, std::move(start), options);
  absl::Status status = search.Run(absl::GetFlag(FLAGS_search_rounds), guide);
  if (!status.ok()) {
    std::fprintf(stderr, "search on %s: %s\n", instance.label.c_str(),
                 std::string(status.message()).c_str());
  }
  return search.best();
}

// Expert iteration's target: the better of the searches from the baseline
// and from the network's greedy plan, both guided by its placement output.
go::ScoredPlan SearchTarget(const go::GoModel& model,
                            const go::TrainingInstance& instance,
                            const go::ScoredPlan& baseline, uint64_t seed) {
  go::PolicyOutput guide;
  absl::StatusOr<go::ScoredPlan> greedy =
      go::GreedyPlan(model, instance, kAllTasks, &guide);
  go::ScoredPlan best = Search(instance, baseline, &guide, seed);
  if (greedy.ok() && greedy->valid) {
    go::ScoredPlan other = Search(instance, *greedy, &guide, seed + 1);
    if (go::BetterPlan(other, best)) best = other;
  }
  return best;
}

// An instance of a preset machine, or null (reported) when it cannot be made.
std::unique_ptr<go::TrainingInstance> Instance(
    const std::string& label, std::shared_ptr<const gopt::graph::Graph> graph,
    absl::StatusOr<gopt::simulator::Topology> topology) {
  if (!topology.ok()) {
    std::fprintf(stderr, "%s: %s\n", label.c_str(),
                 std::string(topology.status().message()).c_str());
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
      go::MakeTrainingInstance(
          label, std::move(graph),
          std::make_shared<const gopt::simulator::Topology>(*topology));
  if (!instance.ok()) {
    std::fprintf(stderr, "%s: %s\n", label.c_str(),
                 std::string(instance.status().message()).c_str());
    return nullptr;
  }
  return *std::move(instance);
}

// The placement loss --co_location_loss selects.
go::PlacementLoss PlacementLoss() {
  return absl::GetFlag(FLAGS_co_location_loss)
             ? go::PlacementLoss::kCoLocation
             : go::PlacementLoss::kCrossEntropy;
}

// Nodes per device, "n0/n1/...".
std::string DeviceCounts(const std::vector<int32_t>& device, int num_devices) {
  std::vector<int> count(num_devices, 0);
  for (int32_t d : device) ++count[d];
  std::string text;
  for (int d = 0; d < num_devices; ++d) {
    absl::StrAppend(&text, d > 0 ? "/" : "", count[d]);
  }
  return text;
}

// The single-device collapse check: the share of nodes on the most-used
// device in the greedy and the target placement, nodes per device, the mean
// over nodes of the largest placement probability and of the target
// device's probability.
void PrintDeviceShares(const go::PolicyOutput& output,
                       const std::vector<int32_t>& greedy,
                       const std::vector<int32_t>& target) {
  const int d = output.num_devices;
  const size_t n = greedy.size();
  double max_probability = 0;
  double target_probability = 0;
  for (size_t i = 0; i < n; ++i) {
    double best = 0;
    for (int k = 0; k < d; ++k) {
      best = std::max(best, std::exp(double(output.placement[i * d + k])));
    }
    max_probability += best / n;
    target_probability +=
        std::exp(double(output.placement[i * d + target[i]])) / n;
  }
  auto top_share = [&](const std::vector<int32_t>& device) {
    std::vector<int> count(d, 0);
    for (int32_t k : device) ++count[k];
    return double(*std::max_element(count.begin(), count.end())) / n;
  };
  std::printf(
      "  top-device share greedy %.3f target %.3f; nodes per device greedy "
      "%s target %s; mean max p %.3f, mean p(target) %.3f\n",
      top_share(greedy), top_share(target), DeviceCounts(greedy, d).c_str(),
      DeviceCounts(target, d).c_str(), max_probability, target_probability);
}

// The share of `pairs` node pairs (drawn with a fixed seed) on which
// `device` and `target` agree: both on one device or both apart.
double PairAgreement(const std::vector<int32_t>& device,
                     const std::vector<int32_t>& target) {
  std::mt19937_64 rng(1);
  const size_t n = device.size();
  int agree = 0;
  constexpr int kPairs = 4096;
  for (int p = 0; p < kPairs; ++p) {
    const size_t u = rng() % n;
    const size_t v = rng() % n;
    agree += (device[u] == device[v]) == (target[u] == target[v]);
  }
  return static_cast<double>(agree) / kPairs;
}

// A decode without the node-independent part of the placement logits: each
// node takes the allowed device maximising its log-probability minus that
// device's mean log-probability over the nodes allowed on it. Prints its
// step time over the baseline, its top-device share, and the pair
// agreement with the target of it and of the greedy placement.
void PrintCenteredDecode(const go::PolicyOutput& output,
                         const go::TrainingInstance& instance,
                         const go::Actions& actions,
                         const std::vector<int32_t>& target,
                         double baseline_s) {
  const int d = output.num_devices;
  const size_t n = target.size();
  const std::vector<uint8_t>& allowed = instance.features.allowed;
  std::vector<double> mean(d, 0);
  std::vector<int> count(d, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < d; ++k) {
      if (!allowed[i * d + k]) continue;
      mean[k] += output.placement[i * d + k];
      ++count[k];
    }
  }
  for (int k = 0; k < d; ++k) mean[k] /= std::max(count[k], 1);
  go::Actions centered = actions;
  std::vector<int> used(d, 0);
  for (size_t i = 0; i < n; ++i) {
    double best = -1e300;
    for (int k = 0; k < d; ++k) {
      if (!allowed[i * d + k]) continue;
      const double score = output.placement[i * d + k] - mean[k];
      if (score > best) {
        best = score;
        centered.device[i] = k;
      }
    }
    ++used[centered.device[i]];
  }
  const go::ScoredPlan plan = go::ScoreActions(instance, centered);
  std::printf(
      "  centered decode / base %.3f, top-device share %.3f; pair agreement "
      "with the target: greedy %.3f, centered %.3f\n",
      plan.valid && !plan.oom ? plan.step_time_s / baseline_s : 10.0,
      double(*std::max_element(used.begin(), used.end())) / n,
      PairAgreement(actions.device, target),
      PairAgreement(centered.device, target));
}

// A decode that places the nodes in topological order, each on the allowed
// device maximising its log-probability plus `beta` times the share of its
// input bytes (data edges) already placed there: the network's per-node
// distributions, made consistent along the edges. Prints its step time over
// the baseline for beta 0 (the greedy decode), 1, 2 and 4.
void PrintConditionedDecode(const go::PolicyOutput& output,
                            const go::TrainingInstance& instance,
                            const go::Actions& actions, double baseline_s) {
  const gopt::graph::Graph& graph = instance.graph();
  const int d = output.num_devices;
  const std::vector<uint8_t>& allowed = instance.features.allowed;
  std::printf("  conditioned decode / base:");
  for (double beta : {0.0, 1.0, 2.0, 4.0}) {
    go::Actions conditioned = actions;
    std::vector<double> bytes(d);
    for (int u = 0; u < graph.num_nodes(); ++u) {
      std::fill(bytes.begin(), bytes.end(), 0.0);
      double total = 0;
      for (const gopt::graph::Edge& edge : graph.in_edges(u)) {
        if (edge.control) continue;
        const double b = static_cast<double>(graph.EdgeBytes(edge));
        bytes[conditioned.device[edge.src]] += b;
        total += b;
      }
      double best = -1e300;
      for (int k = 0; k < d; ++k) {
        if (!allowed[static_cast<size_t>(u) * d + k]) continue;
        const double score = output.placement[static_cast<size_t>(u) * d + k] +
                             (total > 0 ? beta * bytes[k] / total : 0.0);
        if (score > best) {
          best = score;
          conditioned.device[u] = k;
        }
      }
    }
    const go::ScoredPlan plan = go::ScoreActions(instance, conditioned);
    std::printf(" beta %.0f %.3f", beta,
                plan.valid && !plan.oom ? plan.step_time_s / baseline_s : 10.0);
  }
  std::printf("\n");
}

// The co-location decodes (co_location_decode.h) fed the network's co-location
// logits (when it has the head; with how many of the target's kept and cut
// dependencies the head gets right) and the target's own co-location
// (logit +4 on a dependency whose ends share a device in the target, -4 on
// one it cuts), each with the network's priorities and fusion, against the
// same decodes with every logit 0 (the "metis" placement; components of
// nothing): how well a perfectly trained co-location head could do.
// The probability that a dependency the target keeps (label > 0) has a
// higher logit than one it cuts (ties count half); 0.5 without both kinds.
double RankingAuc(const std::vector<float>& logits,
                  const std::vector<float>& labels) {
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return logits[a] < logits[b]; });
  double kept = 0, cut = 0, rank_sum = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && logits[order[j]] == logits[order[i]]) ++j;
    const double mid_rank = (i + j + 1) / 2.0;  // 1-based average rank
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] > 0) {
        ++kept;
        rank_sum += mid_rank;
      } else {
        ++cut;
      }
    }
    i = j;
  }
  if (kept == 0 || cut == 0) return 0.5;
  return (rank_sum - kept * (kept + 1) / 2) / (kept * cut);
}

// Per feature dependency, +4 where `device` keeps its ends on one device,
// -4 where it cuts it (the oracle co-location logits of a placement).
std::vector<float> SameDeviceLogits(const go::TrainingInstance& instance,
                                    const std::vector<int32_t>& device) {
  const go::GraphFeatures& features = instance.features;
  std::vector<float> logits(features.edge_src.size());
  for (size_t e = 0; e < logits.size(); ++e) {
    logits[e] = device[features.edge_src[e]] == device[features.edge_dst[e]]
                    ? 4.0f
                    : -4.0f;
  }
  return logits;
}

// RankingAuc over the dependencies whose ends are both kernels (the ones
// expert iteration labels: searched targets scatter free nodes at no cost).
double KernelRankingAuc(const go::TrainingInstance& instance,
                        const std::vector<float>& logits,
                        const std::vector<float>& labels) {
  const go::GraphFeatures& features = instance.features;
  const gopt::graph::Graph& graph = instance.graph();
  std::vector<float> kernel_logits, kernel_labels;
  for (size_t e = 0; e < logits.size(); ++e) {
    if (gopt::simulator::baselines::IsFreeNode(
            graph.node(static_cast<int>(features.edge_src[e]))) ||
        gopt::simulator::baselines::IsFreeNode(
            graph.node(static_cast<int>(features.edge_dst[e])))) {
      continue;
    }
    kernel_logits.push_back(logits[e]);
    kernel_labels.push_back(labels[e]);
  }
  return RankingAuc(kernel_logits, kernel_labels);
}

void PrintOracleCoLocationDecode(const go::TrainingInstance& instance,
                                 const std::vector<int32_t>& target_device,
                                 const go::PolicyOutput& output,
                                 const go::Actions& actions,
                                 double baseline_s) {
  const std::vector<float> oracle = SameDeviceLogits(instance, target_device);
  const std::vector<float> untrained(oracle.size(), 0.0f);
  std::vector<std::pair<const char*, const std::vector<float>*>> sets = {
      {"oracle", &oracle}, {"zero", &untrained}};
  if (output.co_location.size() == oracle.size()) {
    sets.insert(sets.begin(), {"network", &output.co_location});
    // The head against the target: recall of kept and of cut dependencies.
    int kept = 0, kept_right = 0, cut = 0, cut_right = 0;
    for (size_t e = 0; e < oracle.size(); ++e) {
      const bool predicted_keep = output.co_location[e] > 0;
      if (oracle[e] > 0) {
        ++kept;
        kept_right += predicted_keep;
      } else {
        ++cut;
        cut_right += !predicted_keep;
      }
    }
    std::printf(
        "  co-location head: %d/%d kept and %d/%d cut dependencies right, "
        "ranking AUC %.3f (between two kernels: %.3f)\n",
        kept_right, kept, cut_right, cut,
        RankingAuc(output.co_location, oracle),
        KernelRankingAuc(instance, output.co_location, oracle));
    // The head's ranking at relative thresholds: the least-kept fraction cut.
    std::printf("  relative cuts (network logits) / base:");
    for (double fraction : {0.02, 0.1, 0.2, 0.3, 0.4}) {
      absl::StatusOr<double> threshold =
          go::CutFractionLogit(instance, output.co_location, fraction);
      if (!threshold.ok()) continue;
      for (bool scheduled : {false, true}) {
        absl::StatusOr<std::vector<int32_t>> device =
            scheduled ? go::ScheduledComponentPlacement(
                            instance, output.co_location, *threshold)
                      : go::ComponentPlacement(instance, output.co_location,
                                               *threshold);
        if (!device.ok()) continue;
        go::Actions placed = actions;
        placed.device = *std::move(device);
        const go::ScoredPlan plan = go::ScoreActions(instance, placed);
        std::printf(
            " %s %.2f %.3f", scheduled ? "sched" : "comp", fraction,
            plan.valid && !plan.oom ? plan.step_time_s / baseline_s : 10.0);
      }
    }
    std::printf("\n");
  }
  for (const auto& [name, logits] : sets) {
    std::printf("  co-location decode (%s logits) / base:", name);
    auto print = [&](const char* kind, double value,
                     absl::StatusOr<std::vector<int32_t>> device) {
      if (!device.ok()) {
        std::printf(" %s %.1f error", kind, value);
        return;
      }
      go::Actions placed = actions;
      placed.device = *std::move(device);
      const go::ScoredPlan plan = go::ScoreActions(instance, placed);
      std::printf(
          " %s %.1f %.3f", kind, value,
          plan.valid && !plan.oom ? plan.step_time_s / baseline_s : 10.0);
    };
    for (double sharpness : go::kCoLocationSharpness) {
      print("metis", sharpness,
            go::MetisCoLocationPlacement(instance, *logits, sharpness));
    }
    for (double threshold : go::kComponentThresholdLogits) {
      print("comp", threshold,
            go::ComponentPlacement(instance, *logits, threshold));
    }
    for (double slack : go::kBalancedMergeSlack) {
      print("merge", slack,
            go::BalancedMergePlacement(instance, *logits, slack));
    }
    for (double threshold : go::kComponentThresholdLogits) {
      print("sched", threshold,
            go::ScheduledComponentPlacement(instance, *logits, threshold));
    }
    std::printf("\n");
  }
}

// Greedy agreement with the target relabelled to the greedy placement, the
// relabelled target's step time over the searched one, and the losses.
void Report(const char* when, go::GoModel* model,
            const go::TrainingInstance& instance, const go::ScoredPlan& best,
            const go::ScoredPlan& baseline) {
  const gopt::policy::TaskSet& tasks = kAllTasks;
  go::PolicyOutput output;
  absl::StatusOr<go::ScoredPlan> greedy =
      go::GreedyPlan(*model, instance, tasks, &output);
  if (!greedy.ok()) {
    std::printf("%s %s: greedy failed: %s\n", when, instance.label.c_str(),
                std::string(greedy.status().message()).c_str());
    return;
  }
  absl::StatusOr<go::DistillTarget> target = go::MakeDistillTarget(
      instance, best.plan,
      absl::GetFlag(FLAGS_relabel_to_greedy) ? &greedy->plan.device : nullptr);
  if (!target.ok()) return;
  const size_t n = target->device.size();
  int same = 0;
  int same_raw = 0;
  for (size_t i = 0; i < n; ++i) {
    same += greedy->plan.device[i] == target->device[i];
    same_raw += greedy->plan.device[i] == best.plan.device[i];
  }
  // The target devices' log-probabilities under the greedy run's output.
  const int d = instance.features.num_devices;
  int below_100 = 0;
  int masked_target = 0;
  double worst = 0;
  double sum_ok = 0;
  for (size_t i = 0; i < n; ++i) {
    const double logp = output.placement[i * d + target->device[i]];
    below_100 += logp < -100;
    masked_target += !instance.features.allowed[i * d + target->device[i]];
    worst = std::min(worst, logp);
    if (logp > -100) sum_ok -= logp;
  }
  PrintDeviceShares(output, greedy->plan.device, target->device);
  std::printf(
      "  %s: %zu nodes, %d targets below logp -100, %d on a masked device, "
      "worst logp %.3g, mean nll of the rest %.3f\n",
      instance.label.c_str(), n, below_100, masked_target, worst,
      sum_ok / std::max<size_t>(n - below_100, 1));
  gopt::simulator::Plan relabelled = best.plan;
  relabelled.device = target->device;
  const go::ScoredPlan rescored =
      go::ScorePlan(instance, std::move(relabelled));
  // Which decision makes the greedy plan slow: the target's plan with the
  // network's fusion levels (its groups rebuilt), or with the network's
  // priorities.
  const go::Actions actions = go::SampleActions(output, nullptr);
  go::Actions net_fusion = actions;
  net_fusion.device = target->device;
  net_fusion.priority = best.plan.priority;
  go::Actions encoded = net_fusion;  // the fusion target, decoded
  for (size_t i = 0; i < n; ++i) {
    encoded.fusion_priority[i] = target->fused[i] ? go::kPriorityLevels - 1 : 0;
  }
  gopt::simulator::Plan net_priority = best.plan;
  net_priority.device = target->device;
  if (!actions.priority.empty()) net_priority.priority = actions.priority;
  auto ratio = [&](const go::ScoredPlan& p) {
    return p.valid && !p.oom ? p.step_time_s / baseline.step_time_s : 10.0;
  };
  std::printf(
      "  target plan / base with the network's fusion %.3f, with its "
      "priorities %.3f, with its own fusion target decoded %.3f\n",
      ratio(go::ScoreActions(instance, net_fusion)),
      ratio(go::ScorePlan(instance, std::move(net_priority))),
      ratio(go::ScoreActions(instance, encoded)));
  PrintCenteredDecode(output, instance, actions, target->device,
                      baseline.step_time_s);
  PrintConditionedDecode(output, instance, actions, baseline.step_time_s);
  PrintOracleCoLocationDecode(instance, best.plan.device, output, actions,
                              baseline.step_time_s);
  // How far one good plan's cuts say another's: a second search target
  // (another seed) read as a ranking of the first's kernel co-location,
  // the ceiling of what a head trained on such targets can rank.
  const go::ScoredPlan second = SearchTarget(*model, instance, baseline,
                                             absl::GetFlag(FLAGS_seed) + 1000);
  std::printf(
      "  second search target (seed + 1000) / base %.3f; its co-location "
      "ranks the first's kernel dependencies with AUC %.3f\n",
      ratio(second),
      KernelRankingAuc(instance, SameDeviceLogits(instance, second.plan.device),
                       SameDeviceLogits(instance, best.plan.device)));
  // The same for placements the network reads or starts from: the best
  // baseline's, and the HEFT and METIS hints among its node features.
  const std::vector<float> target_logits =
      SameDeviceLogits(instance, best.plan.device);
  std::printf(
      "  co-location AUC against the target: best baseline %.3f, HEFT hint "
      "%.3f, METIS hint %.3f\n",
      KernelRankingAuc(instance,
                       SameDeviceLogits(instance, baseline.plan.device),
                       target_logits),
      KernelRankingAuc(
          instance, SameDeviceLogits(instance, instance.features.heft_device),
          target_logits),
      KernelRankingAuc(
          instance, SameDeviceLogits(instance, instance.features.metis_device),
          target_logits));
  go::DistillOptions zero;
  zero.tasks = tasks;
  zero.learning_rate = 0;  // measures only
  zero.placement_loss = PlacementLoss();
  go::DistillationTrainer measure(model, zero);
  absl::StatusOr<go::DistillStats> stats = measure.Step({&*target});
  std::printf(
      "%s %-40s greedy/base %.3f target/base %.3f relabelled/target %.4f "
      "agree %.3f (raw %.3f) loss place %.3f sched %.3f fuse %.3f\n",
      when, instance.label.c_str(),
      greedy->valid && !greedy->oom ? greedy->step_time_s / baseline.step_time_s
                                    : 10.0,
      best.step_time_s / baseline.step_time_s,
      rescored.valid ? rescored.step_time_s / best.step_time_s : -1.0,
      static_cast<double>(same) / n, static_cast<double>(same_raw) / n,
      stats.ok() ? stats->placement_loss : -1,
      stats.ok() ? stats->scheduling_loss : -1,
      stats.ok() ? stats->fusion_loss : -1);
}

// The placement priors' learned scales and gate bias: how much of the
// placement logits the heuristic priors set.
void PrintPriors(const char* when, const go::GoModel& model) {
  std::printf("%s priors:", when);
  for (const auto& item : model.impl().network->named_parameters()) {
    if (item.key().find("prior") == std::string::npos) continue;
    const torch::Tensor value = item.value().detach().reshape({-1});
    std::printf(" %s=[", item.key().c_str());
    for (int64_t i = 0; i < std::min<int64_t>(value.numel(), 4); ++i) {
      std::printf("%s%.3f", i > 0 ? "," : "", value[i].item<float>());
    }
    std::printf("]");
  }
  std::printf("\n");
}

// The training instances (--random_graphs random graphs on random
// machines), each with its best baseline and `model`'s search target,
// reported before training ("train-before"). Errors:
// RandomGeneratedGraphs'.
absl::StatusOr<std::vector<Held>> TrainingInstances(go::GoModel* model,
                                                    uint64_t seed) {
  absl::StatusOr<std::vector<go::CorpusGraph>> graphs =
      go::RandomGeneratedGraphs(absl::GetFlag(FLAGS_random_graphs),
                                absl::GetFlag(FLAGS_max_nodes), seed);
  if (!graphs.ok()) return graphs.status();
  std::printf("%zu random graphs\n", graphs->size());
  const int machines = absl::GetFlag(FLAGS_random_topologies);
  std::vector<Held> train;
  for (size_t g = 0; g < graphs->size(); ++g) {
    absl::StatusOr<gopt::simulator::Topology> topology =
        go::RandomTopology(seed, static_cast<int>(g) % std::max(machines, 1));
    const std::string label = absl::StrCat(
        (*graphs)[g].label, "@", topology.ok() ? topology->name : "?");
    Held t;
    t.instance = Instance(label, (*graphs)[g].graph, std::move(topology));
    if (t.instance == nullptr) continue;
    absl::StatusOr<go::ScoredPlan> baseline =
        go::BestBaselinePlan(*t.instance, seed);
    if (!baseline.ok()) {
      std::printf("skipped: %s\n",
                  std::string(baseline.status().message()).c_str());
      continue;
    }
    t.baseline = *baseline;
    t.best = SearchTarget(*model, *t.instance, t.baseline, seed);
    Report("train-before", model, *t.instance, t.best, t.baseline);
    train.push_back(std::move(t));
  }
  return train;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  go::SetTorchThreads(1);
  // An empty --checkpoint: a fresh network of the shipped shape.
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      absl::GetFlag(FLAGS_checkpoint).empty()
          ? go::GoModel::Create(go::GoModelOptions{})
          : go::GoModel::Load(absl::GetFlag(FLAGS_checkpoint));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  std::vector<Held> held;
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    absl::StatusOr<gopt::graph::Graph> graph = go::LoadGraphSource(source);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(graph.status().message()).c_str());
      return 1;
    }
    auto shared = std::make_shared<const gopt::graph::Graph>(*graph);
    for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
      Held h;
      h.instance = Instance(absl::StrCat(source, "@", name), shared,
                            gopt::simulator::PresetTopology(name));
      if (h.instance == nullptr) return 1;
      absl::StatusOr<go::ScoredPlan> baseline =
          go::BestBaselinePlan(*h.instance, seed);
      if (!baseline.ok()) continue;
      h.baseline = *baseline;
      h.best = SearchTarget(**model, *h.instance, h.baseline, seed);
      held.push_back(std::move(h));
    }
  }
  absl::StatusOr<std::vector<Held>> train =
      TrainingInstances(model->get(), seed);
  if (!train.ok()) {
    std::fprintf(stderr, "%s\n", std::string(train.status().message()).c_str());
    return 1;
  }
  std::vector<const go::TrainingInstance*> views;
  for (const Held& t : *train) views.push_back(t.instance.get());
  for (const Held& h : held) {
    Report("held-before ", model->get(), *h.instance, h.best, h.baseline);
  }
  PrintPriors("before", **model);
  // --train_rounds=0: the network as loaded, reported once.
  if (absl::GetFlag(FLAGS_train_rounds) == 0) return 0;
  go::ExpertIterationOptions expert;
  expert.tasks = kAllTasks;
  expert.rounds = absl::GetFlag(FLAGS_train_rounds);
  expert.max_seconds = 1e9;
  expert.instances_per_round = 2;
  expert.search_rounds = absl::GetFlag(FLAGS_search_rounds);
  expert.distill_steps = 2;
  expert.ppo_steps = absl::GetFlag(FLAGS_ppo_steps);
  expert.relabel_to_greedy = absl::GetFlag(FLAGS_relabel_to_greedy);
  expert.simulation_threads = 1;
  expert.seed = seed;
  expert.distill.learning_rate = 1e-3;
  expert.distill.placement_loss = PlacementLoss();
  absl::StatusOr<go::ExpertIterationResult> result =
      go::RunExpertIteration(model->get(), views, expert);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(result.status().message()).c_str());
    return 1;
  }
  PrintPriors("after", **model);
  for (const Held& t : *train) {
    Report("train-after ", model->get(), *t.instance, t.best, t.baseline);
  }
  for (const Held& h : held) {
    Report("held-after  ", model->get(), *h.instance, h.best, h.baseline);
  }
  return 0;
}
