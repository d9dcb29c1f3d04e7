#include "server/container_limits.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace gopt::server {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kGiB = int64_t{1} << 30;

// A fresh directory standing in for /sys/fs/cgroup, removed afterwards.
class FakeCgroup {
 public:
  FakeCgroup() {
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            (std::string("gopt_cgroup_") + test->test_suite_name() + "_" +
             test->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeCgroup() { fs::remove_all(root_); }

  // Writes `contents` to `relative` under the root, creating directories.
  void Write(const std::string& relative, const std::string& contents) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << contents;
  }

  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

HostResources Host(int affinity_cpus, int64_t physical_memory_bytes) {
  HostResources host;
  host.affinity_cpus = affinity_cpus;
  host.physical_memory_bytes = physical_memory_bytes;
  return host;
}

TEST(ContainerLimitsTest, NoCgroupFilesMeansNoLimit) {
  FakeCgroup cgroup;
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/8, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 8);
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, MissingRootMeansNoLimit) {
  const ContainerLimits limits = ReadContainerLimits(
      "/nonexistent/gopt/cgroup", Host(/*affinity_cpus=*/3,
                                       /*physical_memory_bytes=*/64 * kGiB));
  EXPECT_EQ(limits.cpus, 3);
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, V2QuotaRoundsUp) {
  FakeCgroup cgroup;
  cgroup.Write("cgroup.controllers", "cpuset cpu io memory pids\n");
  cgroup.Write("cpu.max", "150000 100000\n");
  cgroup.Write("memory.max", "8589934592\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/16, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 2);
  EXPECT_EQ(limits.memory_limit_bytes, 8 * kGiB);
}

TEST(ContainerLimitsTest, V2MaxMeansNoLimit) {
  FakeCgroup cgroup;
  cgroup.Write("cgroup.controllers", "cpu memory\n");
  cgroup.Write("cpu.max", "max 100000\n");
  cgroup.Write("memory.max", "max\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/4, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 4);
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, AffinityBelowQuotaWins) {
  FakeCgroup cgroup;
  cgroup.Write("cgroup.controllers", "cpu memory\n");
  cgroup.Write("cpu.max", "400000 100000\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/1, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 1);
}

TEST(ContainerLimitsTest, TinyQuotaGivesOneCpu) {
  FakeCgroup cgroup;
  cgroup.Write("cgroup.controllers", "cpu memory\n");
  cgroup.Write("cpu.max", "10000 100000\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/8, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 1);
}

TEST(ContainerLimitsTest, V1QuotaAndMemory) {
  FakeCgroup cgroup;
  cgroup.Write("cpu/cpu.cfs_quota_us", "300000\n");
  cgroup.Write("cpu/cpu.cfs_period_us", "100000\n");
  cgroup.Write("memory/memory.limit_in_bytes", "2147483648\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/16, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 3);
  EXPECT_EQ(limits.memory_limit_bytes, 2 * kGiB);
}

TEST(ContainerLimitsTest, V1UnlimitedValues) {
  FakeCgroup cgroup;
  cgroup.Write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  cgroup.Write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  cgroup.Write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/2, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 2);
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, MemoryLimitAbovePhysicalMemoryIsNoLimit) {
  FakeCgroup cgroup;
  cgroup.Write("memory/memory.limit_in_bytes", "137438953472\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/2, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, GarbageMeansNoLimit) {
  FakeCgroup cgroup;
  cgroup.Write("cgroup.controllers", "cpu memory\n");
  cgroup.Write("cpu.max", "lots\n");
  cgroup.Write("memory.max", "8G\n");
  const ContainerLimits limits = ReadContainerLimits(
      cgroup.root(), Host(/*affinity_cpus=*/6, /*physical_memory_bytes=*/
                          64 * kGiB));
  EXPECT_EQ(limits.cpus, 6);
  EXPECT_FALSE(limits.memory_limit_bytes.has_value());
}

TEST(ContainerLimitsTest, HostResourcesAreSane) {
  const HostResources host = ReadHostResources();
  EXPECT_GE(host.affinity_cpus, 1);
  EXPECT_GT(host.physical_memory_bytes, 0);
  // Without cgroup files the default reader reports the host's CPUs.
  EXPECT_EQ(ReadContainerLimits("/nonexistent/gopt/cgroup").cpus,
            host.affinity_cpus);
}

}  // namespace
}  // namespace gopt::server
