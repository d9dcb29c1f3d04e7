#include "server/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/http_get.h"

namespace gopt::server {
namespace {

using ::testing::HasSubstr;

// Family names in a text exposition (from its "# TYPE name kind" lines).
std::set<std::string> FamiliesIn(const std::string& text) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "# TYPE ")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    names.insert(parts[2]);
  }
  return names;
}

TEST(MetricsTest, ScrapeHasExactlyTheNamedFamilies) {
  Metrics metrics("1.2.3", "abc");
  metrics.RecordRequest("Optimize", "OK", 0.5);
  metrics.RecordGraphNodes(2000);
  metrics.RecordPredictedSpeedup("placement", 1.5);
  metrics.RecordPolicyInference(0.1);
  metrics.AddSimulations(33);
  const std::vector<std::string> names = MetricNames();
  EXPECT_EQ(FamiliesIn(metrics.Scrape()),
            std::set<std::string>(names.begin(), names.end()));
}

TEST(MetricsTest, CountersAndLabels) {
  Metrics metrics("1.2.3", "abc");
  metrics.RecordRequest("Optimize", "OK", 0.2);
  metrics.RecordRequest("Optimize", "OK", 0.3);
  metrics.RecordRequest("Evaluate", "INVALID_ARGUMENT", 0.01);
  metrics.AddSimulations(5);
  metrics.RequestStarted();
  const std::string text = metrics.Scrape();
  EXPECT_THAT(
      text,
      HasSubstr("gopt_requests_total{code=\"OK\",method=\"Optimize\"} 2"));
  EXPECT_THAT(text, HasSubstr("gopt_requests_total{code=\"INVALID_ARGUMENT\","
                              "method=\"Evaluate\"} 1"));
  EXPECT_THAT(text, HasSubstr("gopt_simulations_total 5"));
  EXPECT_THAT(text, HasSubstr("gopt_inflight_requests 1"));
  EXPECT_THAT(text, HasSubstr("gopt_build_info{revision=\"abc\","
                              "version=\"1.2.3\"} 1"));
  EXPECT_THAT(text, HasSubstr("gopt_request_duration_seconds_count{method="
                              "\"Optimize\"} 2"));
  EXPECT_THAT(text, HasSubstr("process_resident_memory_bytes "));
}

TEST(MetricsTest, PlanStoreResultsImprovementsAndSize) {
  Metrics metrics("1.2.3", "abc");
  metrics.RecordPlanStore("hit", /*lookup_seconds=*/0.001, /*improved=*/false);
  metrics.RecordPlanStore("refresh", /*lookup_seconds=*/0, /*improved=*/true);
  metrics.AddPlanStoreImprovement();
  metrics.SetPlanStoreSize(/*entries=*/3, /*bytes=*/4096);
  const std::string text = metrics.Scrape();
  EXPECT_THAT(text,
              HasSubstr("gopt_plan_store_requests_total{result=\"hit\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("gopt_plan_store_requests_total{result=\"miss\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("gopt_plan_store_requests_total{result=\"error\"} 0"));
  EXPECT_THAT(text, HasSubstr("gopt_plan_store_lookup_seconds_count 1"));
  EXPECT_THAT(text, HasSubstr("gopt_plan_store_improvements_total 2"));
  EXPECT_THAT(text, HasSubstr("gopt_plan_store_entries 3"));
  EXPECT_THAT(text, HasSubstr("gopt_plan_store_bytes 4096"));
}

TEST(MetricsTest, ExposerOnFreePort) {
  Metrics metrics("1", "r");
  ASSERT_TRUE(metrics.StartExposer("127.0.0.1:0").ok());
  EXPECT_GT(metrics.exposer_port(), 0);
  EXPECT_EQ(metrics.StartExposer("127.0.0.1:0").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MetricsTest, StalledClientDoesNotBlockScrapes) {
  Metrics metrics("1", "r");
  ASSERT_TRUE(metrics.StartExposer("127.0.0.1:0").ok());
  // Clients that connect and never send a byte.
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(metrics.exposer_port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(
        connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    stalled.push_back(fd);
  }
  const absl::StatusOr<std::string> body =
      gopt::testing::HttpGet(metrics.exposer_port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_NE(body->find("gopt_build_info"), std::string::npos);
  for (int fd : stalled) close(fd);
}

}  // namespace
}  // namespace gopt::server
