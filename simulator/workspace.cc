#include "simulator/workspace.h"

#include <cstddef>

namespace gopt::simulator::internal {
namespace {

// Which workspace a run uses, and how long it lives. One per thread and
// kind, shared by every Simulator: the steady state of a training loop
// allocates nothing, and a thread holds one workspace however many graphs
// it simulates (a pre-training corpus keeps hundreds of Simulators alive; a
// workspace each would multiply the corpus's memory several times). A
// workspace grows to the largest graph simulated on its thread, so a server
// thread that once simulated a million nodes with two inputs each would
// keep ~250 MiB for good. Instead the Simulator that used it last frees it
// on destruction when it holds more than kKeptWorkspaceBytes; the engine
// destroys a request's Simulator on the thread that ran the request.
// (Measured on that graph: the process stays 287 MiB above the graph's own
// memory after the Simulator is gone when the workspace is kept, 35 MiB
// when it is freed.) Smaller workspaces (graphs up to ~250k such nodes;
// training graphs have at most 80k) stay for the next call, so Simulators
// made and dropped per call, as the baselines and Evaluate do, still find
// them warm.
constexpr size_t kKeptWorkspaceBytes = size_t{64} << 20;

// The calling thread's workspaces (full runs, candidate runs). Trivially
// destructible, so ~Simulator can read them even while the thread's other
// thread-locals are being destroyed (a Simulator can outlive
// WorkspaceOwner).
struct ThreadWorkspace {
  Workspace* workspace = nullptr;   // owned; freed by WorkspaceOwner
  const void* last_user = nullptr;  // the Simulator that used it last
};
thread_local ThreadWorkspace thread_workspaces[2];

// Frees the thread's workspaces when the thread exits.
struct WorkspaceOwner {
  ~WorkspaceOwner() {
    for (ThreadWorkspace& owned : thread_workspaces) {
      delete owned.workspace;
      owned.workspace = nullptr;
    }
  }
};

}  // namespace

Workspace& AcquireThreadWorkspace(const void* user, WorkspaceKind kind) {
  thread_local WorkspaceOwner owner;
  ThreadWorkspace& thread_workspace =
      thread_workspaces[kind == WorkspaceKind::kCandidateRuns ? 1 : 0];
  if (thread_workspace.workspace == nullptr) {
    thread_workspace.workspace = new Workspace;
  }
  thread_workspace.last_user = user;
  return *thread_workspace.workspace;
}

void ReleaseThreadWorkspaces(const void* user) {
  for (ThreadWorkspace& thread_workspace : thread_workspaces) {
    if (thread_workspace.last_user != user) continue;
    thread_workspace.last_user = nullptr;
    if (thread_workspace.workspace != nullptr &&
        thread_workspace.workspace->HeldBytes() > kKeptWorkspaceBytes) {
      delete thread_workspace.workspace;
      thread_workspace.workspace = nullptr;
    }
  }
}

}  // namespace gopt::simulator::internal
