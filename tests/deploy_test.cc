// Checks the deployment files against the code: every YAML and JSON file
// under deploy/ parses; the Kubernetes probes, ports, config keys, scrape
// targets and dashboard queries name the ports, flags and metrics that
// gopt-server really has; the Dockerfiles, ConfigMap and compose file keep
// their promises (CPU image by default, listen settings from the
// environment, drain + shutdown within each grace period, no replica count
// beside the HPA, no GPU reserved); scripts/runtime-packages.sh finds the
// package of every library gopt-server loads. scripts/image-test.sh builds
// and runs the image itself.

#include <fnmatch.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "server/metrics.h"

namespace gopt {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

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

struct CommandResult {
  std::string output;  // stdout (and stderr where the command redirects it)
  int exit_status = -1;
};

// Runs `command` through the shell.
CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    result.output += buffer;
  }
  const int status = pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs gopt-server --helpfull and returns its output.
std::string ServerHelp() {
  return RunCommand(std::string(GOPT_SERVER_BINARY) + " --helpfull 2>&1")
      .output;
}

// One Dockerfile instruction: keyword in capitals and its arguments, with
// continuation lines joined and comments dropped.
struct Instruction {
  std::string keyword;
  std::string arguments;
};

std::vector<Instruction> DockerfileInstructions(const std::string& relative) {
  std::vector<Instruction> instructions;
  std::string pending;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(SourcePath(relative)), '\n')) {
    const absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (pending.empty() && (stripped.empty() || stripped[0] == '#')) continue;
    if (!pending.empty() && !stripped.empty() && stripped[0] == '#') continue;
    if (absl::EndsWith(stripped, "\\")) {
      absl::StrAppend(&pending, stripped.substr(0, stripped.size() - 1), " ");
      continue;
    }
    absl::StrAppend(&pending, stripped);
    const size_t space = pending.find(' ');
    instructions.push_back({absl::AsciiStrToUpper(pending.substr(0, space)),
                            space == std::string::npos
                                ? ""
                                : std::string(absl::StripAsciiWhitespace(
                                      pending.substr(space + 1)))});
    pending.clear();
  }
  return instructions;
}

// KEY=VALUE pairs of every ENV instruction of the last stage.
std::map<std::string, std::string> RuntimeEnvironment(
    const std::string& relative) {
  std::map<std::string, std::string> environment;
  for (const Instruction& instruction : DockerfileInstructions(relative)) {
    if (instruction.keyword == "FROM") environment.clear();
    if (instruction.keyword != "ENV") continue;
    for (absl::string_view pair :
         absl::StrSplit(instruction.arguments, ' ', absl::SkipEmpty())) {
      const std::vector<std::string> key_value =
          absl::StrSplit(pair, absl::MaxSplits('=', 1));
      if (key_value.size() == 2) environment[key_value[0]] = key_value[1];
    }
  }
  return environment;
}

double ToSeconds(const std::string& text) {
  double seconds = -1;
  EXPECT_TRUE(absl::SimpleAtod(absl::StripSuffix(text, "s"), &seconds)) << text;
  return seconds;
}

// Kubernetes quantities with binary suffixes ("8Gi", "512Mi") in bytes.
int64_t QuantityBytes(const std::string& quantity) {
  int64_t value = 0;
  for (const auto& [suffix, factor] :
       std::vector<std::pair<std::string, int64_t>>{
           {"Gi", int64_t{1} << 30}, {"Mi", int64_t{1} << 20}, {"", 1}}) {
    if (absl::EndsWith(quantity, suffix) &&
        absl::SimpleAtoi(absl::StripSuffix(quantity, suffix), &value)) {
      return value * factor;
    }
  }
  ADD_FAILURE() << "not a quantity: " << quantity;
  return -1;
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
  const YAML::Node monitor =
      FindKind("ServiceMonitor", "components/prometheus-operator");
  for (const YAML::Node& endpoint : monitor["spec"]["endpoints"]) {
    EXPECT_THAT(service_ports, Contains(endpoint["port"].as<std::string>()));
    EXPECT_EQ(endpoint["path"].as<std::string>(), "/metrics");
  }
}

TEST(DeployTest, KustomizationsListExistingFiles) {
  int overlays = 0;
  std::vector<std::string> dirs = {"deploy/base",
                                   "deploy/components/prometheus-operator"};
  for (const auto& entry :
       fs::directory_iterator(SourcePath("deploy/overlays"))) {
    dirs.push_back("deploy/overlays/" + entry.path().filename().string());
    ++overlays;
  }
  EXPECT_GE(overlays, 3);
  for (const std::string& dir : dirs) {
    const YAML::Node kustomization =
        YAML::LoadFile(SourcePath(absl::StrCat(dir, "/kustomization.yaml")));
    for (const char* list : {"resources", "components"}) {
      for (const YAML::Node& entry : kustomization[list]) {
        EXPECT_TRUE(fs::exists(
            SourcePath(absl::StrCat(dir, "/", entry.as<std::string>()))))
            << dir << ": " << entry.as<std::string>();
      }
    }
    for (const YAML::Node& patch : kustomization["patches"]) {
      EXPECT_TRUE(fs::exists(
          SourcePath(absl::StrCat(dir, "/", patch["path"].as<std::string>()))));
    }
  }
}

// Base must apply on any cluster: only core Kubernetes kinds, no CRDs such
// as the Prometheus Operator's ServiceMonitor.
TEST(DeployTest, BaseHasOnlyCoreKinds) {
  const std::set<std::string> core = {
      "ConfigMap",           "Deployment", "Service", "HorizontalPodAutoscaler",
      "PodDisruptionBudget", "StatefulSet"};
  const YAML::Node kustomization =
      YAML::LoadFile(SourcePath("deploy/base/kustomization.yaml"));
  for (const YAML::Node& resource : kustomization["resources"]) {
    const std::string path =
        SourcePath("deploy/base/" + resource.as<std::string>());
    for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
      EXPECT_THAT(core, Contains(doc["kind"].as<std::string>())) << path;
    }
  }
}

// The HPA owns the replica count; a count in the Deployment would reset it
// on every apply.
TEST(DeployTest, DeploymentLeavesReplicasToTheHpa) {
  const YAML::Node deployment = FindKind("Deployment", "base/deployment");
  EXPECT_FALSE(deployment["spec"]["replicas"]);
  const YAML::Node hpa = FindKind("HorizontalPodAutoscaler", "base/hpa");
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["name"].as<std::string>(),
            deployment["metadata"]["name"].as<std::string>());
}

// Every overlay names the image through kustomize's `images:` with a
// registry prefix (or builds on an overlay that does).
TEST(DeployTest, OverlaysSetTheImageWithARegistry) {
  for (const auto& entry :
       fs::directory_iterator(SourcePath("deploy/overlays"))) {
    const YAML::Node kustomization =
        YAML::LoadFile((entry.path() / "kustomization.yaml").string());
    if (!kustomization["images"]) {
      EXPECT_NE(kustomization["resources"][0].as<std::string>(), "../../base")
          << entry.path() << " uses the base image name unchanged";
      continue;
    }
    const YAML::Node image = kustomization["images"][0];
    EXPECT_EQ(image["name"].as<std::string>(), "gopt") << entry.path();
    EXPECT_THAT(image["newName"].as<std::string>(), HasSubstr("/"))
        << entry.path();
  }
}

// gopt-server runs no tensor on CUDA: only gopt-worker (the GPU overlay's
// worker.yaml, which runs plans for real) reserves a GPU.
TEST(DeployTest, OnlyTheWorkerReservesAGpu) {
  const fs::path worker = SourcePath("deploy/overlays/gpu/worker.yaml");
  bool worker_reserves = false;
  for (const auto& entry :
       fs::recursive_directory_iterator(SourcePath("deploy"))) {
    if (!entry.is_regular_file()) continue;
    const std::string text = ReadFile(entry.path().string());
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#") ||
          !absl::StrContains(line, "nvidia.com/gpu")) {
        continue;
      }
      EXPECT_TRUE(fs::equivalent(entry.path(), worker)) << entry.path();
      worker_reserves = true;
    }
  }
  EXPECT_TRUE(worker_reserves) << worker;
  const YAML::Node container = YAML::LoadAllFromFile(
      worker.string())[0]["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["command"][0].as<std::string>(), "gopt-worker");
  EXPECT_EQ(container["readinessProbe"]["grpc"]["port"].as<int>(), 50052);
  const YAML::Node service = YAML::LoadAllFromFile(worker.string())[1];
  EXPECT_EQ(service["spec"]["clusterIP"].as<std::string>(), "None");
}

// Threads, queue and memory budget fit the pod: threads = CPUs requested
// (no CPU limit, so no cgroup quota to derive them from), memory budget
// below the memory limit.
TEST(DeployTest, ConfigMapFitsThePod) {
  const YAML::Node data = FindKind("ConfigMap", "base/configmap")["data"];
  const YAML::Node resources = ServerContainer()["resources"];
  EXPECT_EQ(data["GOPT_THREADS"].as<std::string>(),
            resources["requests"]["cpu"].as<std::string>());
  int queue_length = 0;
  ASSERT_TRUE(absl::SimpleAtoi(data["GOPT_QUEUE_LENGTH"].as<std::string>(),
                               &queue_length));
  EXPECT_GT(queue_length, 0);
  int64_t budget = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      data["GOPT_MEMORY_BUDGET_BYTES"].as<std::string>(), &budget));
  int64_t max_message = 0;
  ASSERT_TRUE(absl::SimpleAtoi(data["GOPT_MAX_MESSAGE_BYTES"].as<std::string>(),
                               &max_message));
  EXPECT_LT(budget + queue_length * max_message,
            QuantityBytes(resources["limits"]["memory"].as<std::string>()));
}

// Drain + shutdown timeout end before each environment's SIGKILL: docker
// stop's default 10 s for the image, terminationGracePeriodSeconds for
// Kubernetes, stop_grace_period for compose.
TEST(DeployTest, DrainAndShutdownFitEachGracePeriod) {
  for (const char* dockerfile : {"Dockerfile", "Dockerfile.cuda"}) {
    const std::map<std::string, std::string> env =
        RuntimeEnvironment(dockerfile);
    ASSERT_TRUE(env.count("GOPT_DRAIN_SECONDS")) << dockerfile;
    ASSERT_TRUE(env.count("GOPT_SHUTDOWN_TIMEOUT_SECONDS")) << dockerfile;
    EXPECT_LT(ToSeconds(env.at("GOPT_DRAIN_SECONDS")) +
                  ToSeconds(env.at("GOPT_SHUTDOWN_TIMEOUT_SECONDS")),
              10)
        << dockerfile << ": docker stop sends SIGKILL after 10 s";
  }
  const YAML::Node data = FindKind("ConfigMap", "base/configmap")["data"];
  const YAML::Node pod =
      FindKind("Deployment", "base/deployment")["spec"]["template"]["spec"];
  EXPECT_FALSE(ServerContainer()["lifecycle"]) << "a preStop hook adds time";
  EXPECT_LT(
      ToSeconds(data["GOPT_DRAIN_SECONDS"].as<std::string>()) +
          ToSeconds(data["GOPT_SHUTDOWN_TIMEOUT_SECONDS"].as<std::string>()),
      pod["terminationGracePeriodSeconds"].as<double>());
  const YAML::Node gopt = YAML::LoadFile(
      SourcePath("deploy/docker-compose.yml"))["services"]["gopt"];
  EXPECT_LT(
      ToSeconds(gopt["environment"]["GOPT_DRAIN_SECONDS"].as<std::string>()) +
          ToSeconds(gopt["environment"]["GOPT_SHUTDOWN_TIMEOUT_SECONDS"]
                        .as<std::string>()),
      ToSeconds(gopt["stop_grace_period"].as<std::string>()));
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

TEST(DeployTest, DockerfilesExposePortsAndCheckHealthOnGoptListen) {
  for (const char* dockerfile : {"Dockerfile", "Dockerfile.cuda"}) {
    bool exposes = false;
    bool health = false;
    bool user = false;
    for (const Instruction& instruction : DockerfileInstructions(dockerfile)) {
      if (instruction.keyword == "EXPOSE") {
        exposes =
            instruction.arguments == absl::StrCat(kGrpcPort, " ", kMetricsPort);
      } else if (instruction.keyword == "USER") {
        user = absl::StartsWith(instruction.arguments, "10001");
      } else if (instruction.keyword == "HEALTHCHECK") {
        health = true;
        // The shell form, so the probe follows a moved GOPT_LISTEN, or the
        // plaintext health-only port when one is set (TLS on the main one).
        EXPECT_THAT(
            instruction.arguments,
            HasSubstr(R"(CMD probe="${GOPT_HEALTH_LISTEN:-$GOPT_LISTEN}";)"))
            << dockerfile;
        EXPECT_THAT(
            instruction.arguments,
            HasSubstr(R"(gopt health --server="127.0.0.1:${probe##*:}")"))
            << dockerfile;
        // `gopt` loads LibTorch at start: ~2 s on a busy host.
        EXPECT_THAT(instruction.arguments, HasSubstr("--timeout=10s"))
            << dockerfile;
      }
    }
    EXPECT_TRUE(exposes) << dockerfile;
    EXPECT_TRUE(health) << dockerfile;
    EXPECT_TRUE(user) << dockerfile;
  }
}

// The listen addresses come from the environment (ENV defaults a ConfigMap
// or `docker run -e` can override), not from the ENTRYPOINT.
TEST(DeployTest, DockerfilesTakeListenSettingsFromTheEnvironment) {
  for (const char* dockerfile : {"Dockerfile", "Dockerfile.cuda"}) {
    std::string entrypoint;
    for (const Instruction& instruction : DockerfileInstructions(dockerfile)) {
      if (instruction.keyword == "ENTRYPOINT")
        entrypoint = instruction.arguments;
    }
    EXPECT_EQ(entrypoint, R"(["gopt-server"])") << dockerfile;
    const std::map<std::string, std::string> env =
        RuntimeEnvironment(dockerfile);
    EXPECT_EQ(env.at("GOPT_LISTEN"), absl::StrCat("0.0.0.0:", kGrpcPort));
    EXPECT_EQ(env.at("GOPT_METRICS_LISTEN"),
              absl::StrCat("0.0.0.0:", kMetricsPort));
    EXPECT_EQ(env.at("GOPT_POLICY_DIR"), "/opt/gopt/policies");
  }
}

// `docker build -t gopt:cpu .` builds the last stage: it must be the CPU
// runtime, on either builder; the CUDA variant lives in Dockerfile.cuda with
// one LibTorch (not Debian's as well).
TEST(DeployTest, DefaultDockerfileBuildsTheCpuImage) {
  std::vector<std::string> stages;
  for (const Instruction& instruction : DockerfileInstructions("Dockerfile")) {
    if (instruction.keyword == "FROM") stages.push_back(instruction.arguments);
  }
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.back(), "${RUNTIME_IMAGE} AS runtime");
  EXPECT_THAT(absl::AsciiStrToLower(ReadFile(SourcePath("Dockerfile"))),
              Not(HasSubstr("libtorch_url")));
  const std::string cuda = ReadFile(SourcePath("Dockerfile.cuda"));
  EXPECT_THAT(cuda,
              HasSubstr("GOPT_DEBIAN_LIBTORCH=0 ./scripts/install-deps.sh"));
  EXPECT_THAT(cuda, HasSubstr("libtorch-cxx11-abi-shared-with-deps-1.13."));
  EXPECT_THAT(ReadFile(SourcePath("scripts/install-deps.sh")),
              HasSubstr("GOPT_DEBIAN_LIBTORCH"));
}

// Whether `path` (relative to the source root) is among the `copied` COPY
// sources: named, under a named directory, or matched by a wildcard.
bool IsCopied(const std::string& path, const std::set<std::string>& copied) {
  for (const std::string& source : copied) {
    if (path == source || absl::StartsWith(path, source + "/") ||
        fnmatch(source.c_str(), path.c_str(), FNM_PATHNAME) == 0) {
      return true;
    }
  }
  return false;
}

// The build stage copies sources by name (so docs edits do not recompile):
// every directory CMake descends into must be copied, itself, through an
// ancestor, or as its CMakeLists.txt; in a directory copied file by file,
// every non-test source must be copied too (tests/ is not built in the
// image: only its CMakeLists.txt files are needed).
TEST(DeployTest, DockerfilesCopyEverySourceDirectory) {
  const std::regex subdirectory(R"(add_subdirectory\((\w+)\))");
  const std::regex tests_only_rest(
      R"(if\(NOT GOPT_BUILD_TESTS\)\s*return\(\))");
  for (const char* dockerfile : {"Dockerfile", "Dockerfile.cuda"}) {
    std::set<std::string> copied;
    for (const Instruction& instruction : DockerfileInstructions(dockerfile)) {
      if (instruction.keyword != "COPY" ||
          absl::StartsWith(instruction.arguments, "--from")) {
        continue;
      }
      std::vector<std::string> paths =
          absl::StrSplit(instruction.arguments, ' ', absl::SkipEmpty());
      paths.pop_back();  // the destination
      EXPECT_THAT(paths, Not(Contains(".")))
          << dockerfile << ": COPY . copies docs";
      for (const std::string& path : paths) {
        copied.insert(std::string(absl::StripSuffix(path, "/")));
      }
    }
    EXPECT_FALSE(IsCopied("docs/deploy.md", copied)) << dockerfile;
    EXPECT_THAT(copied, Contains("CMakeLists.txt"));
    std::vector<std::string> pending = {""};
    while (!pending.empty()) {
      const std::string dir = pending.back();
      pending.pop_back();
      std::string cmake = ReadFile(
          SourcePath(dir.empty() ? "CMakeLists.txt" : dir + "/CMakeLists.txt"));
      // The image is built with GOPT_BUILD_TESTS=OFF: what follows
      // `if(NOT GOPT_BUILD_TESTS) return()` is not configured.
      std::smatch tests_only;
      if (std::regex_search(cmake, tests_only, tests_only_rest)) {
        cmake = tests_only.prefix().str();
      }
      for (auto it =
               std::sregex_iterator(cmake.begin(), cmake.end(), subdirectory);
           it != std::sregex_iterator(); ++it) {
        const std::string child =
            dir.empty() ? (*it)[1].str() : dir + "/" + (*it)[1].str();
        EXPECT_TRUE(IsCopied(child + "/CMakeLists.txt", copied))
            << dockerfile << " does not copy " << child;
        pending.push_back(child);
        if (IsCopied(child, copied) || absl::StartsWith(child, "tests")) {
          continue;
        }
        for (const auto& entry : fs::directory_iterator(SourcePath(child))) {
          const std::string name = entry.path().filename().string();
          const std::string ext = entry.path().extension().string();
          if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h") ||
              absl::EndsWith(name, "_test.cc")) {
            continue;
          }
          EXPECT_TRUE(IsCopied(child + "/" + name, copied))
              << dockerfile << " does not copy " << child << "/" << name;
        }
      }
    }
  }
}

// `GOPT_LISTEN=... make serve` reaches gopt-server.
TEST(DeployTest, MakeServeTakesSettingsFromTheEnvironment) {
  const CommandResult result = RunCommand(absl::StrCat(
      "cd ", GOPT_SOURCE_DIR,
      " && GOPT_LISTEN=0.0.0.0:50099 GOPT_METRICS_LISTEN=127.0.0.1:9499 "
      "make -n serve 2>&1"));
  ASSERT_EQ(result.exit_status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--listen=0.0.0.0:50099"));
  EXPECT_THAT(result.output, HasSubstr("--metrics_listen=127.0.0.1:9499"));
}

// scripts/runtime-packages.sh names the package of every library the
// server loads, including those under /lib on merged-/usr Debian (libc6,
// libgcc-s1, zlib1g, ...), which an earlier version missed.
TEST(DeployTest, RuntimePackagesOwnEveryLoadedLibrary) {
  if (RunCommand("command -v dpkg >/dev/null 2>&1").exit_status != 0) {
    GTEST_SKIP() << "no dpkg: not a Debian host";
  }
  const CommandResult result =
      RunCommand(absl::StrCat(SourcePath("scripts/runtime-packages.sh"), " ",
                              GOPT_SERVER_BINARY, " 2>&1"));
  ASSERT_EQ(result.exit_status, 0) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("unowned"))) << result.output;
  const std::vector<std::string> packages =
      absl::StrSplit(result.output, '\n', absl::SkipEmpty());
  for (const char* package :
       {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libgrpc++1.51",
        "libprotobuf32", "libopenblas0-pthread"}) {
    EXPECT_THAT(packages, Contains(package));
  }
}

}  // namespace
}  // namespace gopt
