// libFuzzer entry point for the whole request path of gopt-server, without
// the transport: bytes -> server::ParseRequest (what the service does with
// a request's bytes off the wire: count an inline graph's nodes on the wire,
// refuse oversized graphs, parse) -> gopt.v1.OptimizeRequest or
// EvaluateRequest -> engine::Engine (validation, memory admission, import,
// topology conversion, baselines, simulation, response). The engine has no
// policy loaded (baselines only, no LibTorch), a small node cap, a 1 GiB
// memory budget and a short deadline, so one input runs in milliseconds.
//
// Input layout: byte 0 chooses the call (even: Optimize, odd: Evaluate);
// the rest is the request in protobuf binary form. Seeds come from
// make_request_seeds.sh (real graphs from ../shared/data); to read an input:
//   tail -c +2 INPUT | protoc --proto_path=proto \
//     --decode=gopt.v1.OptimizeRequest gopt/v1/optimizer.proto
//
// With GOPT_FUZZ_VERBOSE set, each call's status (or step time) is printed,
// to see what a replayed input does.
//
// Besides crashes and sanitizer reports, an OK response that carries a
// non-finite or non-positive step time (Optimize: also the default plan's),
// or a non-finite speedup, lower bound or baseline time, aborts: no such
// number may reach a client. In libFuzzer builds request_mutator.cc adds
// structure-aware mutations (topology values, plans, options, budgets).

#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "engine/memory_budget.h"
#include "gopt/v1/optimizer.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "server/request_wire.h"

namespace {

// Deadline of one call: long enough for the baselines on a 2,000-node graph,
// short enough that libFuzzer's -timeout only fires on a real hang.
constexpr absl::Duration kDeadline = absl::Seconds(2);

gopt::engine::MemoryBudget& FuzzedMemoryBudget() {
  static gopt::engine::MemoryBudget* const budget =
      new gopt::engine::MemoryBudget(int64_t{1} << 30);
  return *budget;
}

const gopt::engine::Engine& FuzzedEngine() {
  static const gopt::engine::Engine* const engine = [] {
    // Mutated protobufs make libprotobuf log on every input; the engine's
    // Status is what is under test.
    google::protobuf::SetLogHandler(nullptr);
    gopt::engine::EngineOptions options;
    options.max_graph_nodes = 2'000;
    return new gopt::engine::Engine(options, /*policies=*/nullptr);
  }();
  return *engine;
}

// Aborts (a libFuzzer crash) when `value` must not reach a client.
void CheckNumber(const char* call, const char* field, double value,
                 bool must_be_positive) {
  if (std::isfinite(value) && (!must_be_positive || value > 0)) return;
  std::cerr << "request_fuzzer: " << call << " answered OK with " << field
            << " = " << value << "\n";
  std::abort();
}

void CheckOptimizeResponse(const gopt::v1::OptimizeResponse& response) {
  CheckNumber("Optimize", "step_time_s", response.step_time_s(), true);
  CheckNumber("Optimize", "default_step_time_s", response.default_step_time_s(),
              true);
  CheckNumber("Optimize", "speedup_over_default",
              response.speedup_over_default(), false);
  CheckNumber("Optimize", "best_baseline_step_time_s",
              response.best_baseline_step_time_s(), false);
  CheckNumber("Optimize", "lower_bound_s", response.lower_bound_s(), false);
  for (const gopt::v1::MethodResult& baseline : response.baselines()) {
    if (baseline.valid()) {
      CheckNumber("Optimize", "baselines[].step_time_s", baseline.step_time_s(),
                  false);
    }
  }
}

void CheckEvaluateResponse(const gopt::v1::EvaluateResponse& response) {
  CheckNumber("Evaluate", "step_time_s", response.step_time_s(), true);
  CheckNumber("Evaluate", "default_step_time_s", response.default_step_time_s(),
              false);
  CheckNumber("Evaluate", "lower_bound_s", response.lower_bound_s(), false);
  for (double busy : response.device_busy_s()) {
    CheckNumber("Evaluate", "device_busy_s[]", busy, false);
  }
}

bool Verbose() {
  static const bool verbose = std::getenv("GOPT_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

template <typename Response>
void PrintOutcome(const char* call, const absl::StatusOr<Response>& response) {
  if (!Verbose()) return;
  if (response.ok()) {
    std::cerr << call << ": OK, step_time_s " << response->step_time_s()
              << ", default_step_time_s " << response->default_step_time_s()
              << "\n";
    for (const std::string& warning : response->warnings()) {
      std::cerr << "  warning: " << warning << "\n";
    }
  } else {
    std::cerr << call << ": " << response.status() << "\n";
  }
}

// Parses the request the way the service does; false when it refuses the
// bytes (the fuzzer then moves on).
bool ParseLikeTheServer(const uint8_t* data, size_t size,
                        const gopt::engine::Engine& engine,
                        google::protobuf::MessageLite* request) {
  grpc::Slice slice(data, size);
  const grpc::ByteBuffer buffer(&slice, 1);
  const absl::Status status =
      gopt::server::ParseRequest(buffer, engine.options().max_graph_nodes,
                                 request->GetTypeName(), request);
  if (!status.ok() && Verbose()) std::cerr << "parse: " << status << "\n";
  return status.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const gopt::engine::Engine& engine = FuzzedEngine();
  const bool evaluate = (data[0] & 1) != 0;
  // The same context gopt-server builds for OptimizeStream: a deadline, a
  // cancellation flag, a progress callback and the memory budget.
  const std::atomic<bool> cancelled{false};
  gopt::engine::RequestContext context;
  context.deadline = absl::Now() + kDeadline;
  context.cancelled = &cancelled;
  context.on_progress = [](const gopt::v1::OptimizeProgress& progress) {
    volatile size_t bytes = progress.ByteSizeLong();
    (void)bytes;
  };
  context.memory = &FuzzedMemoryBudget();
  if (evaluate) {
    gopt::v1::EvaluateRequest request;
    if (!ParseLikeTheServer(data + 1, size - 1, engine, &request)) return 0;
    auto response = engine.Evaluate(request, context);
    PrintOutcome("Evaluate", response);
    if (response.ok()) CheckEvaluateResponse(*response);
  } else {
    gopt::v1::OptimizeRequest request;
    if (!ParseLikeTheServer(data + 1, size - 1, engine, &request)) return 0;
    auto response = engine.Optimize(request, context);
    PrintOutcome("Optimize", response);
    if (response.ok()) CheckOptimizeResponse(*response);
  }
  return 0;
}
