#include "simulator/workspace.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <thread>

namespace gopt::simulator::internal {
namespace {

// Each test runs on a thread of its own, whose workspaces start empty.
template <typename Body>
void OnNewThread(Body body) {
  std::thread(body).join();
}

TEST(WorkspaceTest, EachThreadHasOneWorkspacePerKind) {
  OnNewThread([] {
    const int user = 0;
    Workspace& full = AcquireThreadWorkspace(&user, WorkspaceKind::kFullRuns);
    EXPECT_EQ(&AcquireThreadWorkspace(&user, WorkspaceKind::kFullRuns), &full);
    EXPECT_NE(&AcquireThreadWorkspace(&user, WorkspaceKind::kCandidateRuns),
              &full);
    const Workspace* other = nullptr;
    OnNewThread([&] {
      other = &AcquireThreadWorkspace(&user, WorkspaceKind::kFullRuns);
    });
    EXPECT_NE(other, &full);
  });
}

TEST(WorkspaceTest, ReleaseFreesALargeWorkspaceOfItsLastUser) {
  OnNewThread([] {
    const int first = 0;
    const int second = 0;
    const size_t large = size_t{20} << 20;  // 80 MiB of int32_t
    AcquireThreadWorkspace(&first, WorkspaceKind::kFullRuns)
        .unit_of.reserve(large);
    ReleaseThreadWorkspaces(&second);  // not its last user: kept
    EXPECT_GE(AcquireThreadWorkspace(&first, WorkspaceKind::kFullRuns)
                  .unit_of.capacity(),
              large);
    ReleaseThreadWorkspaces(&first);
    EXPECT_EQ(AcquireThreadWorkspace(&first, WorkspaceKind::kFullRuns)
                  .unit_of.capacity(),
              0u);
  });
}

TEST(WorkspaceTest, ReleaseKeepsASmallWorkspace) {
  OnNewThread([] {
    const int user = 0;
    AcquireThreadWorkspace(&user, WorkspaceKind::kCandidateRuns)
        .units.reserve(1000);
    ReleaseThreadWorkspaces(&user);
    EXPECT_GE(AcquireThreadWorkspace(&user, WorkspaceKind::kCandidateRuns)
                  .units.capacity(),
              1000u);
  });
}

TEST(WorkspaceTest, HeldBytesCountsTheArraysCapacity) {
  Workspace ws;
  EXPECT_EQ(ws.HeldBytes(), 0u);
  ws.units.reserve(10);
  ws.transfers.reserve(3);
  EXPECT_EQ(ws.HeldBytes(), 10 * sizeof(UnitState) + 3 * sizeof(Transfer));
}

}  // namespace
}  // namespace gopt::simulator::internal
