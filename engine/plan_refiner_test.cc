#include "engine/plan_refiner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/plan_store.h"
#include "engine/testing/test_stores.h"

namespace gopt::engine {
namespace {

// An entry made zero-shot, with its request kept.
void AddEntry(PlanStore* store, const std::string& key, bool keep_request) {
  PlanStoreEntry entry;
  entry.set_key(key);
  entry.set_step_time_s(1.0);
  entry.mutable_plan()->add_device(0);
  entry.mutable_provenance()->set_budget_mode(gopt::v1::Budget::ZERO_SHOT);
  entry.mutable_provenance()->set_num_simulations(7);
  ASSERT_TRUE(store->Put(entry, "", PutMode::kKeepBest).ok());
  if (!keep_request) return;
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_name(key);
  request.mutable_topology()->set_preset("v100x2-pcie");
  ASSERT_TRUE(store->PutRequest(key, request.SerializeAsString()).ok());
}

TEST(PlanRefinerTest, RefinesEntriesWithRequestsWithMoreEffort) {
  const std::shared_ptr<PlanStore> store = testing::FreshSqliteStore();
  AddEntry(store.get(), "k1-with", /*keep_request=*/true);
  AddEntry(store.get(), "k1-without", /*keep_request=*/false);
  std::vector<gopt::v1::OptimizeRequest> sent;
  PlanRefinerOptions options;
  options.fine_tune_steps = 25;
  PlanRefiner refiner(
      store.get(),
      [&](const gopt::v1::OptimizeRequest& request, absl::Time,
          const std::atomic<bool>*)
          -> absl::StatusOr<gopt::v1::OptimizeResponse> {
        sent.push_back(request);
        gopt::v1::OptimizeResponse response;
        response.set_stored(true);
        return response;
      },
      [] { return false; }, options);
  absl::StatusOr<PlanRefiner::RoundResult> round = refiner.RunRound();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->refined, 1);
  EXPECT_EQ(round->improved, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].graph().name(), "k1-with");
  EXPECT_EQ(sent[0].budget().mode(), gopt::v1::Budget::FINE_TUNE);
  EXPECT_EQ(sent[0].budget().fine_tune_steps(), 25);
  EXPECT_TRUE(sent[0].allow_partial_result());
  EXPECT_EQ(sent[0].options().seed(), 7u);
}

TEST(PlanRefinerTest, AsksForMoreThanTheEntryRecords) {
  PlanRefinerOptions options;
  options.fine_tune_steps = 10;
  PlanRefiner refiner(nullptr, nullptr, nullptr, options);
  PlanStoreEntry entry;
  entry.mutable_provenance()->set_budget_mode(gopt::v1::Budget::FINE_TUNE);
  entry.mutable_provenance()->set_fine_tune_steps(40);
  std::optional<gopt::v1::OptimizeRequest> request =
      refiner.RefinementRequest(entry, gopt::v1::OptimizeRequest());
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->budget().fine_tune_steps(), 50);
  // Unbounded fine-tuning recorded: nothing more to ask for.
  entry.mutable_provenance()->set_fine_tune_steps(0);
  EXPECT_FALSE(refiner.RefinementRequest(entry, gopt::v1::OptimizeRequest())
                   .has_value());
}

// A request arriving mid-refinement cancels it; nothing counts as refined.
TEST(PlanRefinerTest, YieldsToRequests) {
  const std::shared_ptr<PlanStore> store = testing::FreshSqliteStore();
  AddEntry(store.get(), "k1-with", /*keep_request=*/true);
  std::atomic<bool> busy{false};
  PlanRefinerOptions options;
  options.yield_poll = absl::Milliseconds(1);
  PlanRefiner refiner(
      store.get(),
      [&](const gopt::v1::OptimizeRequest&, absl::Time,
          const std::atomic<bool>* cancelled)
          -> absl::StatusOr<gopt::v1::OptimizeResponse> {
        busy.store(true);  // a request arrives
        while (!cancelled->load()) absl::SleepFor(absl::Milliseconds(1));
        return absl::CancelledError("cancelled");
      },
      [&] { return busy.load(); }, options);
  absl::StatusOr<PlanRefiner::RoundResult> round = refiner.RunRound();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->yielded, 1);
  EXPECT_EQ(round->refined, 0);
}

}  // namespace
}  // namespace gopt::engine
