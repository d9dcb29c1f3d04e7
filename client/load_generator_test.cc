#include "client/load_generator.h"

#include <vector>

#include "gtest/gtest.h"

namespace gopt::client {
namespace {

TEST(QuantileTest, NearestRank) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Quantile(sorted, 0.5), 5);
  EXPECT_EQ(Quantile(sorted, 0.9), 9);
  EXPECT_EQ(Quantile(sorted, 0.99), 10);
  EXPECT_EQ(Quantile(sorted, 0), 1);
  EXPECT_EQ(Quantile({}, 0.5), 0);
}

TEST(LoadReportTest, TextNamesErrorCodes) {
  LoadReport report;
  report.concurrency = 4;
  report.requests = 10;
  report.ok = 7;
  report.errors_by_code = {{"RESOURCE_EXHAUSTED", 3}};
  const std::string text = LoadReportToText(report);
  EXPECT_NE(text.find("concurrency 4: 10 requests"), std::string::npos);
  EXPECT_NE(text.find("RESOURCE_EXHAUSTED=3"), std::string::npos);
  EXPECT_EQ(LoadReportToJson(report)["errors_by_code"]["RESOURCE_EXHAUSTED"],
            3);
}

TEST(RunLoadTest, RejectsBadOptions) {
  ClientOptions client_options;
  client_options.target = "127.0.0.1:1";
  auto client = OptimizerClient::Connect(client_options);
  ASSERT_TRUE(client.ok());
  LoadOptions options;
  options.concurrency = 0;
  EXPECT_EQ(RunLoad(**client, {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::client
