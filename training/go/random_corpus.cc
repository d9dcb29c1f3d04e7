#include "training/go/random_corpus.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "simulator/generators/generators.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

using simulator::generators::GeneratorOptions;

// An integer uniform in [low, high] (0 when both are 0).
int Between(int low, int high, std::mt19937_64* rng) {
  if (high <= low) return low;
  return low + static_cast<int>((*rng)() % (high - low + 1));
}

// A width uniform in [low, high]; in steps of 64 when both ends are
// multiples of 64 (the transformer families take only such widths, one
// attention head per 64).
int DrawWidth(int low, int high, std::mt19937_64* rng) {
  constexpr int kStep = 64;
  if (low % kStep != 0 || high % kStep != 0) return Between(low, high, rng);
  return kStep * Between(low / kStep, high / kStep, rng);
}

// Per family, the smallest and largest resolved preset options.
std::map<std::string, std::pair<GeneratorOptions, GeneratorOptions>>
FamilyRanges() {
  std::map<std::string, std::pair<GeneratorOptions, GeneratorOptions>> ranges;
  for (const auto& preset : simulator::generators::GeneratorPresets()) {
    if (preset.options.family == kHeldOutFamily) continue;
    absl::StatusOr<GeneratorOptions> resolved =
        simulator::generators::ResolveGeneratorOptions(preset.options);
    if (!resolved.ok()) continue;
    auto it = ranges.find(resolved->family);
    if (it == ranges.end()) {
      ranges.emplace(resolved->family, std::make_pair(*resolved, *resolved));
      continue;
    }
    GeneratorOptions& low = it->second.first;
    GeneratorOptions& high = it->second.second;
    for (int GeneratorOptions::*field :
         {&GeneratorOptions::layers, &GeneratorOptions::batch,
          &GeneratorOptions::seq, &GeneratorOptions::hidden,
          &GeneratorOptions::image_size}) {
      low.*field = std::min(low.*field, (*resolved).*field);
      high.*field = std::max(high.*field, (*resolved).*field);
    }
  }
  return ranges;
}

// Shrinks a size of `options` toward the family's smallest legal value by
// `ratio` (< 1): the layer count first, else the sequence length; a value
// under the family's minimum becomes the smallest legal one. False when
// neither can shrink (both at the family's minimum).
bool Shrink(double ratio, GeneratorOptions* options) {
  for (int GeneratorOptions::*field :
       {&GeneratorOptions::layers, &GeneratorOptions::seq}) {
    const int value = (*options).*field;
    GeneratorOptions candidate = *options;
    for (int smaller = std::max(1, static_cast<int>(value * ratio));
         smaller < value; ++smaller) {
      candidate.*field = smaller;
      if (simulator::generators::ResolveGeneratorOptions(candidate).ok()) {
        *options = candidate;
        return true;
      }
    }
  }
  return false;
}

// The graph of `options`, its layers and then sequence length shrunk in
// proportion until it has at most `max_nodes` nodes; nullopt when the
// generator rejects the sizes or the smallest legal sizes are still over
// the cap. Errors: a generator failure other than a rejected size.
absl::StatusOr<std::optional<graph::Graph>> GenerateUnderCap(
    GeneratorOptions options, int max_nodes) {
  for (int attempt = 0; attempt < 12; ++attempt) {
    absl::StatusOr<graph::Graph> graph =
        simulator::generators::GenerateModelGraph(options);
    if (graph.status().code() == absl::StatusCode::kInvalidArgument ||
        graph.status().code() == absl::StatusCode::kResourceExhausted) {
      return std::nullopt;
    }
    if (!graph.ok()) return graph.status();
    if (graph->num_nodes() <= max_nodes) return *std::move(graph);
    // Node counts grow about linearly in layers (and in unrolled steps);
    // aim a little under the cap.
    const double ratio = 0.9 * max_nodes / graph->num_nodes();
    if (!Shrink(ratio, &options)) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<simulator::Topology> RandomTopology(uint64_t seed, int index) {
  std::seed_seq seeds{static_cast<uint32_t>(seed),
                      static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(index)};
  std::mt19937_64 rng(seeds);
  struct Kind {
    const char* preset;
    const char* short_name;
    double nvlink_bytes_per_s;
  };
  static constexpr Kind kKinds[] = {{"v100x4-nvlink", "v100", 50e9},
                                    {"a100x8-nvlink", "a100", 300e9},
                                    {"h100x8-nvlink", "h100", 450e9}};
  std::vector<simulator::DeviceProfile> profiles;
  for (const Kind& kind : kKinds) {
    absl::StatusOr<simulator::Topology> preset =
        simulator::PresetTopology(kind.preset);
    if (!preset.ok()) return preset.status();
    profiles.push_back(preset->devices[0]);
  }
  const int devices = Between(2, 8, &rng);
  const int first = Between(0, 2, &rng);
  const bool mixed = rng() % 3 == 0;
  const int second = mixed ? (first + 1 + rng() % 2) % 3 : first;
  const bool nvlink = rng() % 2 == 0;
  simulator::Topology topology;
  topology.source = "gopt-train random machine from the preset device profiles";
  std::vector<int> kind_of;
  for (int d = 0; d < devices; ++d) {
    const int kind = d < (devices + 1) / 2 ? first : second;
    kind_of.push_back(kind);
    topology.devices.push_back(profiles[kind]);
    topology.devices.back().name =
        absl::StrCat(kKinds[kind].short_name, ":", d);
  }
  topology.links.resize(static_cast<size_t>(devices) * devices);
  for (int a = 0; a < devices; ++a) {
    for (int b = 0; b < devices; ++b) {
      const double bandwidth =
          nvlink ? std::min(kKinds[kind_of[a]].nvlink_bytes_per_s,
                            kKinds[kind_of[b]].nvlink_bytes_per_s)
                 : 12e9;
      topology.links[a * devices + b] =
          simulator::Link{bandwidth, nvlink ? 4e-6 : 10e-6};
    }
  }
  topology.name =
      absl::StrCat("rand", index, "-", devices, "x-", kKinds[first].short_name,
                   mixed ? absl::StrCat("+", kKinds[second].short_name) : "",
                   "-", nvlink ? "nvlink" : "pcie");
  return topology;
}

absl::StatusOr<std::vector<CorpusGraph>> RandomGeneratedGraphs(int count,
                                                               int max_nodes,
                                                               uint64_t seed) {
  const auto ranges = FamilyRanges();
  std::vector<std::string> families;
  for (const auto& [family, range] : ranges) families.push_back(family);
  std::mt19937_64 rng(seed);
  std::shuffle(families.begin(), families.end(), rng);
  std::vector<CorpusGraph> graphs;
  // Families take turns (in a seeded order) so that every family with a
  // size under the cap appears; one whose smallest draw is over the cap, or
  // that the generator keeps rejecting, leaves the rotation.
  std::map<std::string, int> rejected;
  size_t turn = 0;
  for (int draw = 0;
       draw < 20 * count && static_cast<int>(graphs.size()) < count &&
       !families.empty();
       ++draw) {
    turn %= families.size();
    const std::string family = families[turn];
    const auto& [low, high] = ranges.at(family);
    GeneratorOptions options;
    options.family = family;
    options.layers = Between(low.layers, high.layers, &rng);
    options.batch = Between(low.batch, high.batch, &rng);
    options.seq = Between(low.seq, high.seq, &rng);
    options.hidden = DrawWidth(low.hidden, high.hidden, &rng);
    options.image_size = Between(low.image_size, high.image_size, &rng);
    options.seed = rng();
    ASSIGN_OR_RETURN(std::optional<graph::Graph> graph,
                     GenerateUnderCap(options, max_nodes));
    if (!graph.has_value()) {
      if (++rejected[family] >= 3) {
        families.erase(families.begin() + static_cast<std::ptrdiff_t>(turn));
      }
      continue;
    }
    ++turn;
    std::string label = absl::StrCat("gen:random/", graph->name());
    graphs.push_back(
        {std::move(label), std::make_shared<graph::Graph>(*std::move(graph))});
  }
  return graphs;
}

}  // namespace gopt::policy::go
