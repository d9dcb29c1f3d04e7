#ifndef GOPT_CLIENT_REMOTE_COMMANDS_H_
#define GOPT_CLIENT_REMOTE_COMMANDS_H_

// The `gopt` commands that speak the Optimizer API: optimize and evaluate
// (on --server, or on an in-process engine without it), policies, health
// and load (on --server only). Each takes its Options struct (filled by
// ParseCli, client/command_line.h, or by a test) and writes its report to
// `out`. Errors: the request's or the call's Status (the server's code
// passes through); FailedPrecondition "not SERVING" from health, Unavailable
// from load when some requests failed (after the report is written).
// Thread-safe as long as `out` is not shared.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/local_commands.h"
#include "gopt/v1/optimizer.pb.h"

namespace gopt::client {

// How to reach gopt-server: --server, --timeout, --tls_*.
struct RemoteOptions {
  std::string server;  // HOST:PORT; "" = in-process (optimize, evaluate)
  double timeout_seconds = 120;  // deadline of each call, retries included
  std::string tls_ca;            // PEM CA of the server (enables TLS)
  std::string tls_cert;          // PEM client certificate (mTLS)
  std::string tls_key;           // PEM key of tls_cert
  std::string tls_server_name;   // expected name in the server certificate
};

// What an OptimizeRequest is made of (optimize and load).
struct OptimizeRequestOptions {
  std::string path;  // the graph file
  GraphReadOptions read;
  std::string topology = "v100x4-nvlink";  // preset or topology JSON file
  // placement, scheduling, fusion, layout; empty = the server's default
  // (the first three).
  std::vector<std::string> tasks;
  std::string policy;           // NAME or NAME@VERSION; "" = every loaded one
  double budget_seconds = 0;    // time limit (0 = none)
  int fine_tune_steps = 0;      // 0 = zero-shot
  bool baselines_only = false;  // no policy, only the baseline heuristics
  bool allow_partial = false;   // on deadline, the best plan so far
  std::vector<std::string> baseline_methods;  // --methods; empty = default
  uint64_t seed = 0;
  // Stop fine-tuning and the plan search once the best plan is within this
  // factor of the lower bound (e.g. 1.05); 0 = never.
  double stop_within_bound = 0;
  // Run the top K distinct candidates on workers (OptimizeRequest.verify);
  // 0 = no measuring.
  int verify = 0;
  // Fine-tuning's reward (OptimizeOptions.reward): "simulated" (default) or
  // "measured" (plans run on the workers; small graphs only), and the most
  // plans measured for it (0 = the server's default, 64).
  std::string reward = "simulated";
  int max_reward_measurements = 0;
  // OptimizeRequest.store: "default", "skip", "read_only" or "refresh".
  std::string store = "default";
};

// The request `options` describe: the graph file read into it, the
// topology as a preset name or the file's contents. Errors: NotFound for
// files, InvalidArgument for an unknown task.
absl::StatusOr<gopt::v1::OptimizeRequest> MakeOptimizeRequest(
    const OptimizeRequestOptions& options);

// gopt optimize FILE: default vs every baseline vs the chosen plan.
struct OptimizeOptions {
  OptimizeRequestOptions request;
  RemoteOptions remote;
  // In-process: load policies from this directory (one sub-directory with
  // a card.json per policy).
  std::string policy_dir = DefaultPolicyDir();
  // In-process with request.verify: where plans run ("local" = this
  // process's CPU executors, or HOST:PORT,... of gopt-workers).
  std::string workers = "local";
  bool progress = false;   // progress events to stderr
  std::string out_path;    // "" = do not write the chosen plan's JSON
  std::string trace_path;  // "" = no Chrome trace of the chosen plan
  // "" = none; else the graph file with the chosen plan's decisions in it
  // (OptimizeRequest.return_graph), written here.
  std::string write_path;
  std::string schedule_as;  // with write_path: "priority" or "control-deps"
  bool json = false;
  // In-process: the plan store (OpenCliPlanStore: "" = the default under
  // ~/.cache/gopt, "none" = none). A store that cannot be opened is a
  // warning on stderr, never an error.
  std::string plan_store;
};
absl::Status RunOptimize(const OptimizeOptions& options, std::ostream& out);

// gopt evaluate FILE --plan=PLAN: one plan simulated by the engine.
struct EvaluateOptions {
  std::string path;
  GraphReadOptions read;
  std::string topology = "v100x4-nvlink";
  // "" = the plan embedded in the file (an export of `gopt optimize
  // --write` or `gopt apply`).
  std::string plan_path;
  uint64_t seed = 0;
  RemoteOptions remote;
  std::string policy_dir = DefaultPolicyDir();  // in-process engine
  std::string trace_path;
  bool json = false;
};
absl::Status RunEvaluate(const EvaluateOptions& options, std::ostream& out);

// gopt policies: the policies --server has loaded.
struct PoliciesOptions {
  RemoteOptions remote;  // server required
  bool json = false;
};
absl::Status RunPolicies(const PoliciesOptions& options, std::ostream& out);

// gopt health: OK only when --server reports SERVING.
struct HealthOptions {
  RemoteOptions remote;  // server required
};
absl::Status RunHealth(const HealthOptions& options, std::ostream& out);

// gopt load --graph=FILE: the request sent `concurrency` at a time.
struct LoadCommandOptions {
  OptimizeRequestOptions request;  // request.path from --graph
  RemoteOptions remote;            // server required
  int concurrency = 1;             // requests in flight (>= 1)
  double duration_seconds = 10;    // how long to send for (> 0)
  int64_t max_requests = 0;        // stop after this many (0 = no limit)
  bool json = false;
};
absl::Status RunLoadCommand(const LoadCommandOptions& options,
                            std::ostream& out);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_REMOTE_COMMANDS_H_
