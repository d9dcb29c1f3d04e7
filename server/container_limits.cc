#include "server/container_limits.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace gopt::server {
namespace {

// The whole of a small file, or nullopt when it cannot be read.
std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream file(path);
  if (!file.good()) return std::nullopt;
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// A positive integer read from `path`; nullopt for a missing file, "max",
// "-1" or anything else that is not a positive number.
std::optional<int64_t> ReadPositiveInt(const std::string& path) {
  const std::optional<std::string> text = ReadSmallFile(path);
  int64_t value = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value) ||
      value <= 0) {
    return std::nullopt;
  }
  return value;
}

// ceil(quota / period) CPUs, or nullopt when either is not positive.
std::optional<int> QuotaCpus(std::optional<int64_t> quota,
                             std::optional<int64_t> period) {
  if (!quota || !period) return std::nullopt;
  const int64_t cpus = *quota / *period + (*quota % *period != 0 ? 1 : 0);
  return static_cast<int>(std::min<int64_t>(cpus, 1 << 20));
}

// cgroup v2 cpu.max: "QUOTA PERIOD" or "max PERIOD".
std::optional<int> CgroupV2Cpus(const std::string& root) {
  const std::optional<std::string> text = ReadSmallFile(root + "/cpu.max");
  if (!text) return std::nullopt;
  const std::vector<std::string> fields =
      absl::StrSplit(*text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  if (fields.size() != 2) return std::nullopt;
  int64_t quota = 0;
  int64_t period = 0;
  if (!absl::SimpleAtoi(fields[0], &quota) ||
      !absl::SimpleAtoi(fields[1], &period) || quota <= 0 || period <= 0) {
    return std::nullopt;
  }
  return QuotaCpus(quota, period);
}

// cgroup v1: the cpu controller is mounted as "cpu" (usually a link to
// "cpu,cpuacct"); a quota of -1 means none.
std::optional<int> CgroupV1Cpus(const std::string& root) {
  for (const char* controller : {"/cpu", "/cpu,cpuacct"}) {
    const std::string dir = root + controller;
    if (!ReadSmallFile(dir + "/cpu.cfs_period_us")) continue;
    return QuotaCpus(ReadPositiveInt(dir + "/cpu.cfs_quota_us"),
                     ReadPositiveInt(dir + "/cpu.cfs_period_us"));
  }
  return std::nullopt;
}

}  // namespace

HostResources ReadHostResources() {
  HostResources host;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    host.affinity_cpus = std::max(1, CPU_COUNT(&mask));
  } else {
    host.affinity_cpus =
        std::max<int>(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_bytes > 0) {
    host.physical_memory_bytes = static_cast<int64_t>(pages) * page_bytes;
  }
  return host;
}

ContainerLimits ReadContainerLimits(const std::string& cgroup_root) {
  return ReadContainerLimits(cgroup_root, ReadHostResources());
}

ContainerLimits ReadContainerLimits(const std::string& cgroup_root,
                                    const HostResources& host) {
  // cgroup v2 has one unified hierarchy, recognisable by cgroup.controllers
  // at its root; v1 has one directory per controller.
  const bool v2 =
      ReadSmallFile(cgroup_root + "/cgroup.controllers").has_value();
  ContainerLimits limits;
  limits.cpus = std::max(1, host.affinity_cpus);
  const std::optional<int> quota_cpus =
      v2 ? CgroupV2Cpus(cgroup_root) : CgroupV1Cpus(cgroup_root);
  if (quota_cpus) limits.cpus = std::max(1, std::min(limits.cpus, *quota_cpus));

  // v2 writes "max" for no limit (ReadPositiveInt refuses it); v1 writes the
  // largest page-aligned int64, which the physical-memory test below drops.
  const std::optional<int64_t> memory =
      v2 ? ReadPositiveInt(cgroup_root + "/memory.max")
         : ReadPositiveInt(cgroup_root + "/memory/memory.limit_in_bytes");
  if (memory && (host.physical_memory_bytes <= 0 ||
                 *memory <= host.physical_memory_bytes)) {
    limits.memory_limit_bytes = memory;
  }
  return limits;
}

}  // namespace gopt::server
