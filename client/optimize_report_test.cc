#include "client/optimize_report.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

gopt::v1::OptimizeResponse TwoBaselines() {
  gopt::v1::OptimizeResponse response;
  response.set_graph_name("mlp");
  response.set_num_nodes(12);
  response.set_topology_name("v100x2-pcie");
  response.set_default_step_time_s(0.004);
  response.set_step_time_s(0.002);
  response.set_speedup_over_default(2.0);
  response.set_method("best-baseline:heft+fifo+none+default");
  gopt::v1::MethodResult* slow = response.add_baselines();
  slow->set_method("round-robin+fifo+none+default");
  slow->set_valid(true);
  slow->set_step_time_s(0.008);
  gopt::v1::MethodResult* fast = response.add_baselines();
  fast->set_method("heft+fifo+none+default");
  fast->set_valid(true);
  fast->set_step_time_s(0.002);
  gopt::v1::MethodResult* failed = response.add_baselines();
  failed->set_method("m-sct+fifo+none+default");
  failed->set_error("fits on no device");
  response.add_peak_memory_bytes(int64_t{3} << 20);
  response.add_warnings("no policy is loaded");
  return response;
}

TEST(OptimizeReportTest, TableSortsByStepTimeWithRatios) {
  const std::string text = OptimizeResponseToText(TwoBaselines());
  EXPECT_THAT(text, HasSubstr("graph: mlp (12 nodes)"));
  EXPECT_LT(text.find("heft+fifo"), text.find("round-robin"));
  EXPECT_LT(text.find("round-robin"), text.find("m-sct"));
  EXPECT_THAT(text, HasSubstr("2.00x"));
  EXPECT_THAT(text, HasSubstr("0.50x"));
  EXPECT_THAT(text, HasSubstr("invalid"));
  EXPECT_THAT(text, HasSubstr("chosen: best-baseline:heft+fifo+none+default, "
                              "2.000 ms, 2.00x faster than the default"));
  EXPECT_THAT(text, HasSubstr("3.0 MiB"));
  EXPECT_THAT(text, HasSubstr("warning: no policy is loaded"));
}

TEST(OptimizeReportTest, JsonUsesProtoFieldNames) {
  const std::string json = MessageToJson(TwoBaselines());
  EXPECT_THAT(json, HasSubstr("\"speedup_over_default\": 2"));
  EXPECT_THAT(json, HasSubstr("\"partial\": false"));
}

// Adds a valid go-multitask row of `version` at 1 ms to `response`'s policy
// results and makes it the chosen plan; returns the row.
gopt::v1::MethodResult* ChooseGoRow(const std::string& version,
                                    gopt::v1::OptimizeResponse* response) {
  gopt::v1::MethodResult* go = response->add_policy_results();
  go->set_method("go-multitask");
  go->set_version(version);
  go->set_valid(true);
  go->set_step_time_s(0.001);
  response->set_method("go-multitask");
  response->set_step_time_s(0.001);
  return go;
}

// A policy's row names the version that ran, as --policy=NAME@VERSION takes
// it, in the table and in the chosen line; baselines keep their method.
TEST(OptimizeReportTest, PolicyRowsNameTheirVersion) {
  gopt::v1::OptimizeResponse response = TwoBaselines();
  ChooseGoRow("3", &response);
  const std::string text = OptimizeResponseToText(response);
  EXPECT_THAT(text, HasSubstr("go-multitask@3 "));
  EXPECT_THAT(text, HasSubstr("chosen: go-multitask@3, 1.000 ms"));
  EXPECT_THAT(text, HasSubstr("heft+fifo+none+default "));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("heft+fifo+none+default@")));
}

// A policy row names the zero-shot decode that won, after its label; the
// chosen line keeps the label --policy takes.
TEST(OptimizeReportTest, PolicyRowsNameTheirZeroShotDecode) {
  gopt::v1::OptimizeResponse response = TwoBaselines();
  ChooseGoRow("4", &response)->set_zero_shot_decode("one-device+greedy-join");
  const std::string text = OptimizeResponseToText(response);
  EXPECT_THAT(text, HasSubstr("go-multitask@4 (one-device+greedy-join) "));
  EXPECT_THAT(text, HasSubstr("chosen: go-multitask@4, 1.000 ms"));
  EXPECT_THAT(MessageToJson(response),
              HasSubstr("\"zero_shot_decode\": \"one-device+greedy-join\""));
}

// optimize --verify's table and JSON carry each candidate's fastest run
// beside its median (MeasuredCandidate.measured_min_step_time_s).
TEST(OptimizeReportTest, VerifiedRowsShowTheFastestRun) {
  gopt::v1::OptimizeResponse response = TwoBaselines();
  gopt::v1::MeasuredCandidate* row = response.add_verified();
  row->set_method("default");
  row->set_predicted_step_time_s(0.004);
  row->set_measured_step_time_s(0.006);
  row->set_measured_spread(0.1);
  row->set_measured_min_step_time_s(0.005);
  row->set_chosen(true);
  response.set_measured_step_time_s(0.006);
  response.set_measured_min_step_time_s(0.005);
  const std::string text = OptimizeResponseToText(response);
  EXPECT_THAT(text, HasSubstr("fastest run"));
  EXPECT_THAT(text, HasSubstr("6.000 ms"));
  EXPECT_THAT(text, HasSubstr("5.000 ms"));
  const std::string json = MessageToJson(response);
  EXPECT_THAT(json, HasSubstr("\"measured_min_step_time_s\": 0.005"));
}

}  // namespace
}  // namespace gopt::client
