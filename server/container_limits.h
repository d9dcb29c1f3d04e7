#ifndef GOPT_SERVER_CONTAINER_LIMITS_H_
#define GOPT_SERVER_CONTAINER_LIMITS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace gopt::server {

// Limits of the container/cgroup this process runs in.
struct ContainerLimits {
  // Usable CPUs: min(affinity mask, ceil(CFS quota / period)), >= 1.
  int cpus = 1;
  // The cgroup memory limit; nullopt when unlimited or unknown.
  std::optional<int64_t> memory_limit_bytes;
};

// What the machine offers before any cgroup limit: the CPUs in this
// process's affinity mask (which already reflects a cpuset such as
// `docker run --cpuset-cpus`) and the physical memory.
struct HostResources {
  int affinity_cpus = 1;
  int64_t physical_memory_bytes = 0;
};

// The CPUs in this process's affinity mask (sched_getaffinity; >= 1) and the
// machine's physical memory (sysconf). Thread-safe.
HostResources ReadHostResources();

// Reads cgroup v2 (cpu.max, memory.max) or v1 (cpu/cpu.cfs_quota_us,
// cpu/cpu.cfs_period_us, memory/memory.limit_in_bytes) under `cgroup_root`,
// plus sched_getaffinity. Never fails hard: missing or unreadable files mean
// "no limit". The cgroup read is the one mounted at `cgroup_root`, which in a
// container (Docker, Kubernetes) is the container's own. Thread-safe.
//
//   const ContainerLimits limits = ReadContainerLimits();
//   options.threads = limits.cpus;
ContainerLimits ReadContainerLimits(
    const std::string& cgroup_root = "/sys/fs/cgroup");

// As above with the machine's facts passed in, so tests are independent of
// the host. A CPU quota only lowers `host.affinity_cpus`; a memory limit
// above `host.physical_memory_bytes` (cgroup v1 writes "unlimited" as
// 9223372036854771712) counts as no limit (physical memory 0 = unknown: any
// limit counts).
ContainerLimits ReadContainerLimits(const std::string& cgroup_root,
                                    const HostResources& host);

}  // namespace gopt::server

#endif  // GOPT_SERVER_CONTAINER_LIMITS_H_
