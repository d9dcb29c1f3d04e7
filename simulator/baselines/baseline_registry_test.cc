#include "simulator/baselines/baseline_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "simulator/baselines/simple_placers.h"

namespace gopt::simulator::baselines {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class NamedPlacer final : public Placer {
 public:
  explicit NamedPlacer(std::string name) : name_(std::move(name)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override {
    return std::vector<int32_t>(context.graph.num_nodes(), 0);
  }

 private:
  std::string name_;
};

TEST(BaselineRegistryTest, RegistersEveryBuiltinInOrder) {
  BaselineRegistry registry;
  RegisterBuiltinBaselines(&registry);
  EXPECT_THAT(registry.PlacerNames(),
              ElementsAre("single", "round-robin", "random", "expert", "metis",
                          "heft", "m-etf", "m-sct"));
  EXPECT_THAT(registry.SchedulerNames(), ElementsAre("fifo", "critical-path"));
  EXPECT_THAT(registry.FuserNames(),
              ElementsAre("none", "greedy", "greedy-join"));
  EXPECT_THAT(registry.LayoutAssignerNames(), ElementsAre("default", "greedy"));
  for (const std::string& name : registry.PlacerNames()) {
    absl::StatusOr<const Placer*> placer = registry.FindPlacer(name);
    ASSERT_TRUE(placer.ok());
    EXPECT_EQ((*placer)->name(), name);
  }
}

TEST(BaselineRegistryTest, UnknownNameListsTheKnownOnes) {
  BaselineRegistry registry;
  RegisterBuiltinBaselines(&registry);
  const auto placer = registry.FindPlacer("hierarchical");
  EXPECT_EQ(placer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(placer.status().message(),
              HasSubstr("unknown placement 'hierarchical'; known: single, "
                        "round-robin, random, expert, metis, heft, m-etf, "
                        "m-sct"));
  EXPECT_THAT(registry.FindFuser("all").status().message(),
              HasSubstr("unknown fusion 'all'; known: none, greedy"));
}

TEST(BaselineRegistryTest, RejectsDuplicatesNullsAndBadNames) {
  BaselineRegistry registry;
  EXPECT_TRUE(registry.AddPlacer(std::make_unique<SinglePlacer>()).ok());
  EXPECT_EQ(registry.AddPlacer(std::make_unique<SinglePlacer>()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.AddPlacer(nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddPlacer(std::make_unique<NamedPlacer>("a+b")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddPlacer(std::make_unique<NamedPlacer>("")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.AddPlacer(std::make_unique<NamedPlacer>("mine")).ok());
  EXPECT_THAT(registry.PlacerNames(), ElementsAre("single", "mine"));
}

}  // namespace
}  // namespace gopt::simulator::baselines
