#include "training/go/random_corpus.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "simulator/generators/generators.h"

namespace gopt::policy::go {
namespace {

// The generator family a random corpus graph was drawn from: the longest
// family name that starts its graph name.
std::string FamilyOf(const CorpusGraph& graph) {
  std::string best;
  for (const std::string& family : simulator::generators::GeneratorFamilies()) {
    if (graph.graph->name().rfind(family, 0) == 0 &&
        family.size() > best.size()) {
      best = family;
    }
  }
  return best;
}

TEST(RandomGeneratedGraphsTest, SmallCapKeepsSeveralFamilies) {
  // Before graphs over the cap were shrunk within their family, seed 1 with
  // 6 graphs under 1,500 nodes gave 6 resnet50 graphs.
  absl::StatusOr<std::vector<CorpusGraph>> graphs =
      RandomGeneratedGraphs(/*count=*/6, /*max_nodes=*/1500, /*seed=*/1);
  ASSERT_TRUE(graphs.ok()) << graphs.status();
  ASSERT_EQ(graphs->size(), 6u);
  std::set<std::string> families;
  for (const CorpusGraph& graph : *graphs) {
    EXPECT_LE(graph.graph->num_nodes(), 1500) << graph.label;
    const std::string family = FamilyOf(graph);
    EXPECT_FALSE(family.empty()) << graph.label;
    EXPECT_NE(family, kHeldOutFamily) << graph.label;
    families.insert(family);
  }
  EXPECT_GE(families.size(), 4u);
}

TEST(RandomGeneratedGraphsTest, EveryFamilyWithALegalSizeAppears) {
  // At 1,500 nodes inception_v3 (2,467 nodes at any size) has no legal
  // size; every other family but the held-out one shrinks under the cap.
  absl::StatusOr<std::vector<CorpusGraph>> graphs =
      RandomGeneratedGraphs(/*count=*/12, /*max_nodes=*/1500, /*seed=*/2);
  ASSERT_TRUE(graphs.ok()) << graphs.status();
  std::set<std::string> families;
  for (const CorpusGraph& graph : *graphs) families.insert(FamilyOf(graph));
  EXPECT_EQ(families.count("inception_v3"), 0u);
  for (const std::string family : {"bert", "gnmt", "resnet50", "rnnlm"}) {
    EXPECT_EQ(families.count(family), 1u) << family;
  }
}

TEST(RandomGeneratedGraphsTest, DeterministicForSeed) {
  absl::StatusOr<std::vector<CorpusGraph>> a =
      RandomGeneratedGraphs(/*count=*/4, /*max_nodes=*/3000, /*seed=*/7);
  absl::StatusOr<std::vector<CorpusGraph>> b =
      RandomGeneratedGraphs(/*count=*/4, /*max_nodes=*/3000, /*seed=*/7);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].label, (*b)[i].label);
    EXPECT_EQ((*a)[i].graph->num_nodes(), (*b)[i].graph->num_nodes());
  }
}

}  // namespace
}  // namespace gopt::policy::go
