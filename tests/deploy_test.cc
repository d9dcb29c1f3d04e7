// Checks the deployment files against the code: every YAML and JSON file
// under deploy/ parses; the Kubernetes probes, ports, config keys, scrape
// targets and dashboard queries name the ports, flags and metrics that
// gopt-server really has.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "server/metrics.h"

namespace gopt {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

constexpr int kGrpcPort = 50051;
constexpr int kMetricsPort = 9464;

std::string SourcePath(const std::string& relative) {
  return std::string(GOPT_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// All documents of every YAML file under deploy/, keyed by path.
std::vector<std::pair<std::string, YAML::Node>> DeployYamlDocuments() {
  std::vector<std::pair<std::string, YAML::Node>> documents;
  for (const auto& entry :
       fs::recursive_directory_iterator(SourcePath("deploy"))) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".yaml" && ext != ".yml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path())) {
      documents.emplace_back(entry.path().string(), doc);
    }
  }
  return documents;
}

YAML::Node FindKind(const std::string& kind, const std::string& file_part) {
  for (const auto& [path, doc] : DeployYamlDocuments()) {
    if (doc["kind"] && doc["kind"].as<std::string>() == kind &&
        absl::StrContains(path, file_part)) {
      return doc;
    }
  }
  ADD_FAILURE() << "no " << kind << " in deploy/ (" << file_part << ")";
  return YAML::Node();
}

YAML::Node ServerContainer() {
  const YAML::Node deployment = FindKind("Deployment", "base/deployment");
  for (const YAML::Node& container :
       deployment["spec"]["template"]["spec"]["containers"]) {
    if (container["name"].as<std::string>() == "gopt-server") return container;
  }
  ADD_FAILURE() << "no gopt-server container in base/deployment.yaml";
  return YAML::Node();
}

int ContainerPort(const YAML::Node& container, const std::string& name) {
  for (const YAML::Node& port : container["ports"]) {
    if (port["name"].as<std::string>() == name) {
      return port["containerPort"].as<int>();
    }
  }
  ADD_FAILURE() << "container has no port named " << name;
  return -1;
}

// Runs gopt-server --helpfull and returns its output.
std::string ServerHelp() {
  const std::string command =
      std::string(GOPT_SERVER_BINARY) + " --helpfull 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  if (pipe != nullptr) pclose(pipe);
  return output;
}

TEST(DeployTest, EveryYamlAndJsonFileParses) {
  int files = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(SourcePath("deploy"))) {
    const std::string ext = entry.path().extension().string();
    const std::string path = entry.path().string();
    if (ext == ".yaml" || ext == ".yml") {
      EXPECT_NO_THROW(YAML::LoadAllFromFile(path)) << path;
      ++files;
    } else if (ext == ".json") {
      EXPECT_TRUE(nlohmann::json::accept(ReadFile(path))) << path;
      ++files;
    }
  }
  EXPECT_GE(files, 14);
}

TEST(DeployTest, ContainerPortsAreTheServerDefaults) {
  const YAML::Node container = ServerContainer();
  EXPECT_EQ(ContainerPort(container, "grpc"), kGrpcPort);
  EXPECT_EQ(ContainerPort(container, "metrics"), kMetricsPort);
  const std::string help = ServerHelp();
  EXPECT_THAT(help, HasSubstr(absl::StrCat("0.0.0.0:", kGrpcPort)));
  EXPECT_THAT(help, HasSubstr(absl::StrCat("0.0.0.0:", kMetricsPort)));
}

TEST(DeployTest, ProbesAreNativeGrpcOnTheGrpcPort) {
  const YAML::Node container = ServerContainer();
  for (const char* probe :
       {"startupProbe", "readinessProbe", "livenessProbe"}) {
    ASSERT_TRUE(container[probe]) << probe << " missing";
    ASSERT_TRUE(container[probe]["grpc"]) << probe << " is not a gRPC probe";
    EXPECT_EQ(container[probe]["grpc"]["port"].as<int>(), kGrpcPort) << probe;
  }
  // Readiness follows the overall health ("" service), which goes
  // NOT_SERVING on drain; liveness asks for the "liveness" service.
  EXPECT_FALSE(container["readinessProbe"]["grpc"]["service"]);
  EXPECT_EQ(container["livenessProbe"]["grpc"]["service"].as<std::string>(),
            "liveness");
}

TEST(DeployTest, ContainerIsHardened) {
  const YAML::Node deployment = FindKind("Deployment", "base/deployment");
  const YAML::Node pod = deployment["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(),
            "RuntimeDefault");
  const YAML::Node security = ServerContainer()["securityContext"];
  EXPECT_FALSE(security["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(security["readOnlyRootFilesystem"].as<bool>());
  EXPECT_EQ(security["capabilities"]["drop"][0].as<std::string>(), "ALL");
}

TEST(DeployTest, ConfigMapKeysAreServerFlags) {
  const YAML::Node config = FindKind("ConfigMap", "base/configmap");
  const std::string help = ServerHelp();
  int keys = 0;
  for (const auto& entry : config["data"]) {
    const std::string key = entry.first.as<std::string>();
    ASSERT_TRUE(absl::StartsWith(key, "GOPT_")) << key;
    std::string flag = absl::AsciiStrToLower(absl::StripPrefix(key, "GOPT_"));
    EXPECT_THAT(help, HasSubstr(absl::StrCat("--", flag, " ")))
        << key << " does not name a gopt-server flag";
    ++keys;
  }
  EXPECT_GT(keys, 0);
  EXPECT_EQ(config["data"]["GOPT_LISTEN"].as<std::string>(),
            absl::StrCat("0.0.0.0:", kGrpcPort));
  EXPECT_EQ(config["data"]["GOPT_METRICS_LISTEN"].as<std::string>(),
            absl::StrCat("0.0.0.0:", kMetricsPort));
}

TEST(DeployTest, ServiceAndServiceMonitorUseContainerPortNames) {
  const YAML::Node service = FindKind("Service", "base/service");
  std::set<std::string> service_ports;
  for (const YAML::Node& port : service["spec"]["ports"]) {
    service_ports.insert(port["name"].as<std::string>());
    ContainerPort(ServerContainer(), port["targetPort"].as<std::string>());
  }
  const YAML::Node monitor = FindKind("ServiceMonitor", "base/servicemonitor");
  for (const YAML::Node& endpoint : monitor["spec"]["endpoints"]) {
    EXPECT_THAT(service_ports, Contains(endpoint["port"].as<std::string>()));
    EXPECT_EQ(endpoint["path"].as<std::string>(), "/metrics");
  }
}

TEST(DeployTest, KustomizationsListExistingFiles) {
  for (const char* dir :
       {"deploy/base", "deploy/overlays/cpu", "deploy/overlays/gpu"}) {
    const YAML::Node kustomization =
        YAML::LoadFile(SourcePath(absl::StrCat(dir, "/kustomization.yaml")));
    for (const YAML::Node& resource : kustomization["resources"]) {
      EXPECT_TRUE(fs::exists(
          SourcePath(absl::StrCat(dir, "/", resource.as<std::string>()))))
          << dir << ": " << resource.as<std::string>();
    }
    for (const YAML::Node& patch : kustomization["patches"]) {
      EXPECT_TRUE(fs::exists(
          SourcePath(absl::StrCat(dir, "/", patch["path"].as<std::string>()))));
    }
  }
}

TEST(DeployTest, PrometheusAndComposeTargetTheMetricsPort) {
  const YAML::Node prometheus =
      YAML::LoadFile(SourcePath("deploy/prometheus/prometheus.yml"));
  const std::string target =
      prometheus["scrape_configs"][0]["static_configs"][0]["targets"][0]
          .as<std::string>();
  EXPECT_EQ(target, absl::StrCat("gopt:", kMetricsPort));
  const YAML::Node compose =
      YAML::LoadFile(SourcePath("deploy/docker-compose.yml"));
  std::vector<std::string> ports;
  for (const YAML::Node& port : compose["services"]["gopt"]["ports"]) {
    ports.push_back(port.as<std::string>());
  }
  EXPECT_THAT(ports, Contains(absl::StrCat(kGrpcPort, ":", kGrpcPort)));
  EXPECT_THAT(ports, Contains(absl::StrCat(kMetricsPort, ":", kMetricsPort)));
}

TEST(DeployTest, DashboardQueriesNameRealMetrics) {
  const nlohmann::json dashboard =
      nlohmann::json::parse(ReadFile(SourcePath("deploy/grafana/gopt.json")));
  const std::vector<std::string> names = server::MetricNames();
  const std::set<std::string> known(names.begin(), names.end());
  bool has_datasource_variable = false;
  for (const auto& variable : dashboard["templating"]["list"]) {
    if (variable["type"] == "datasource") has_datasource_variable = true;
  }
  EXPECT_TRUE(has_datasource_variable);
  const std::regex metric(R"(\b(gopt|process)_[a-z_]+)");
  std::set<std::string> used;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      const std::string expr = target["expr"];
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric);
           it != std::sregex_iterator(); ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          if (!known.count(name))
            name = std::string(absl::StripSuffix(name, suffix));
        }
        EXPECT_THAT(known, Contains(name))
            << "panel '" << panel["title"] << "' queries " << it->str();
        used.insert(name);
      }
    }
  }
  for (const char* required :
       {"gopt_requests_total", "gopt_request_duration_seconds",
        "gopt_predicted_speedup_ratio", "gopt_inflight_requests"}) {
    EXPECT_THAT(used, Contains(required));
  }
}

TEST(DeployTest, DockerfileExposesPortsAndChecksHealth) {
  const std::string dockerfile = ReadFile(SourcePath("Dockerfile"));
  EXPECT_THAT(dockerfile,
              HasSubstr(absl::StrCat("EXPOSE ", kGrpcPort, " ", kMetricsPort)));
  EXPECT_THAT(dockerfile, HasSubstr(R"(CMD ["gopt", "health")"));
  EXPECT_THAT(dockerfile, HasSubstr("USER 10001"));
  EXPECT_THAT(dockerfile, HasSubstr("AS runtime-cuda"));
}

}  // namespace
}  // namespace gopt
