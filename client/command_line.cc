#include "client/command_line.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/bench.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/generators/generators.h"
#include "util/command_table.h"
#include "util/flag_set.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

using util::FlagSet;

constexpr char kOverview[] =
    R"(gopt: optimize ML computation graphs for ML compilers.

usage: gopt COMMAND [FLAGS] [FILE]
       gopt help COMMAND   (or gopt COMMAND --help): the command's flags

commands:
{commands}
FILE formats (sniffed, or --format): XLA HLO text (hlo), HloModuleProto
(hlo-proto), ONNX (onnx), TensorFlow GraphDef binary/text (graphdef),
TF.js model.json (tfjs), gopt.v1.Graph binary/JSON (gopt), TpuGraphs
tuning protobufs (tpugraphs).

methods: PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]], missing parts at the
framework default (fifo, none, default; m-etf and m-sct default to
placement-order, the order their memory check assumed). Placements: single,
round-robin, random, expert, metis, heft, m-etf, m-sct; scheduling: fifo,
critical-path, placement-order (m-etf, m-sct only); fusion: none, greedy;
layout: default, greedy. best-baseline = the best of every combination.
bench also runs the GO policy (--go_policy in --policy_dir): see
gopt help bench.

exit codes: 0 ok, 1 the server failed, could not be reached or is not
SERVING, 2 an input (graph, topology, plan, policy) is invalid, 64 usage.

examples:
  gopt inspect ../shared/data/hlo/mixer_b16_jax_unopt.hlo
  gopt inspect model.onnx --dim=batch=32 --json
  gopt simulate mixer.hlo --topology=h100x8-nvlink --method=metis+critical-path+greedy --trace=t.json
  gopt bench --topology=v100x4-nvlink --graph=gen:gnmt8-large,model.onnx
  gopt generate gnmt --layers=8 --seq=100 --batch=256 --out=gnmt8.gopt.pb
  gopt optimize mixer.hlo --topology=v100x4-nvlink --server=127.0.0.1:50051
  gopt load --server=127.0.0.1:50051 --graph=mixer.hlo --concurrency=4 --duration=30

Flag names may use '-' for '_' (--budget-seconds). List flags (--graph,
--dim, --methods, --tasks) take comma lists and may be repeated.)";

constexpr char kGoMethodsHelp[] =
    R"(GO methods (the policy --go_policy of --policy_dir): go-zeroshot,
go-finetune (--fine_tune_steps, at most 60 s; warm-started from
best-baseline, as gopt-server does; after each PPO step a local search
simulates --search_simulations plans around the best plan so far, moving
critical-path nodes between devices and ahead in the queues),
go-finetune-cold (the same from the policy's own zero-shot plan),
go-zeroshot-1by1 and go-finetune-1by1 (one task at a time: placement, then
scheduling, then fusion; the fine-tuned one from best-baseline, each task
with a third of the budget), go-zeroshot-separate and go-finetune-separate
(the GO paper's pl | sch | fu: placement with FIFO and no fusion,
scheduling and fusion each on the expert placement, decided apart, then
combined).
)";

// ---- Flags shared by several commands -------------------------------------

absl::Status AddDims(absl::string_view text, graph::ImportOptions* import) {
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(entry, '=');
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim entry '", entry, "' is not NAME=VALUE with VALUE >= 0"));
    }
    import->symbolic_dims[parts[0]] = value;
  }
  return absl::OkStatus();
}

// --format, --dim, --default_dim, --max_nodes into `read(options)`.
template <typename O, typename Read>
void AddReadFlags(FlagSet<O>* flags, Read read) {
  flags->Add("format",
             "input format: auto, hlo, hlo-proto, onnx, graphdef, tfjs, gopt, "
             "tpugraphs",
             [read](O& o) -> std::string& { return read(o).format; });
  flags->AddCustom("dim",
                   "symbolic dimension values, e.g. --dim=batch=8,seq=128", "",
                   [read](O* o, absl::string_view text) {
                     return AddDims(text, &read(*o).import);
                   });
  flags->Add(
      "default_dim", "value for symbolic/unknown dimensions not given by --dim",
      [read](O& o) -> int64_t& { return read(o).import.default_symbolic_dim; });
  flags->Add(
      "max_nodes", "reject graphs with more nodes",
      [read](O& o) -> int64_t& { return read(o).import.limits.max_nodes; });
}

absl::Status CheckRead(const GraphReadOptions& read) {
  if (read.import.default_symbolic_dim < 0) {
    return absl::InvalidArgumentError("--default_dim must be >= 0");
  }
  return absl::OkStatus();
}

constexpr char kTopologyHelp[] =
    "preset name (cpu-host, v100x2-pcie, v100x4-nvlink, a100x8-nvlink, "
    "h100x8-nvlink, tpuv3x8) or a topology JSON file";

// --server, --timeout, --tls_* into `remote(options)`.
template <typename O, typename Remote>
void AddRemoteFlags(FlagSet<O>* flags, Remote remote, bool required) {
  flags->Add("server",
             required ? "gopt-server HOST:PORT (required)"
                      : "gopt-server HOST:PORT (without it the engine runs "
                        "in-process)",
             [remote](O& o) -> std::string& { return remote(o).server; });
  flags->Add("timeout", "deadline of each remote call in seconds",
             [remote](O& o) -> double& { return remote(o).timeout_seconds; });
  flags->Add("tls_ca", "PEM CA of the server certificate (enables TLS)",
             [remote](O& o) -> std::string& { return remote(o).tls_ca; });
  flags->Add("tls_cert", "PEM client certificate (mTLS)",
             [remote](O& o) -> std::string& { return remote(o).tls_cert; });
  flags->Add("tls_key", "PEM key of --tls_cert",
             [remote](O& o) -> std::string& { return remote(o).tls_key; });
  flags->Add(
      "tls_server_name", "expect this name in the server certificate",
      [remote](O& o) -> std::string& { return remote(o).tls_server_name; });
}

// The OptimizeRequest flags (optimize, load) into `request(options)`.
template <typename O, typename Request>
void AddRequestFlags(FlagSet<O>* flags, Request request) {
  AddReadFlags(
      flags, [request](O& o) -> GraphReadOptions& { return request(o).read; });
  flags->Add("topology", kTopologyHelp,
             [request](O& o) -> std::string& { return request(o).topology; });
  flags->Add("tasks",
             "placement,scheduling,fusion,layout (empty: the first three)",
             [request](O& o) -> std::vector<std::string>& {
               return request(o).tasks;
             });
  flags->Add("policy", "policy NAME or NAME@VERSION (empty: every loaded one)",
             [request](O& o) -> std::string& { return request(o).policy; });
  flags->Add("budget_seconds",
             "time limit of the optimization (0 = none); fine-tuning starts "
             "a PPO step only when it is expected to end in time, and spends "
             "what is left on the plan search",
             [request](O& o) -> double& { return request(o).budget_seconds; });
  flags->Add("fine_tune_steps",
             "fine-tune the policy for this many steps (0 = zero-shot)",
             [request](O& o) -> int& { return request(o).fine_tune_steps; });
  flags->Add("baselines_only", "no policy, only the baseline heuristics",
             [request](O& o) -> bool& { return request(o).baselines_only; });
  flags->Add("allow_partial", "on deadline, answer with the best plan so far",
             [request](O& o) -> bool& { return request(o).allow_partial; });
  flags->Add("methods", "baseline methods to try (empty: the default set)",
             [request](O& o) -> std::vector<std::string>& {
               return request(o).baseline_methods;
             });
  flags->Add("seed", "seed for random baselines and sampling",
             [request](O& o) -> uint64_t& { return request(o).seed; });
  flags->Add(
      "stop_within_bound",
      "stop fine-tuning and the plan search once the best plan is "
      "within this factor of the lower bound (e.g. 1.05); "
      "0 = never",
      [request](O& o) -> double& { return request(o).stop_within_bound; });
}

constexpr char kJsonHelp[] = "print one JSON object instead of tables";
constexpr char kPlanStoreHelp[] =
    "without --server: the plan store (a SQLite file, redis://HOST:PORT/DB, "
    "or none); empty = $XDG_CACHE_HOME/gopt/plans.sqlite or "
    "~/.cache/gopt/plans.sqlite";
constexpr char kWriteHelp[] =
    "write FILE with the plan's decisions in it, in FILE's own format "
    "(docs/applying.md)";
constexpr char kScheduleAsHelp[] =
    "how a TF GraphDef / TF.js file gets the schedule: priority (a "
    "_gopt_priority attribute, default) or control-deps (also control "
    "inputs between consecutive ops of a device)";
constexpr char kPolicyDirHelp[] =
    "without --server: load policies from this directory (one "
    "sub-directory with a card.json per policy)";

constexpr char kWorkersHelp[] =
    "without --server: where plans run ('local' = this process's CPU "
    "executors; HOST:PORT,... of gopt-workers; dns:///NAME:PORT)";

absl::Status ExpectOperands(const std::vector<std::string>& operands,
                            size_t count, absl::string_view what) {
  if (operands.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", what, ", got ", operands.size(), " operands"));
  }
  return absl::OkStatus();
}

absl::Status Require(const std::string& value, absl::string_view flag) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  }
  return absl::OkStatus();
}

// ---- Per command: its flags, and its operands and checks ------------------
// Flags(O*) lists the flags of the command whose options are O (the
// pointer selects the overload); Finish(operands, O*) takes the operands
// and checks what one flag alone cannot.

FlagSet<InspectOptions> Flags(InspectOptions*) {
  FlagSet<InspectOptions> flags;
  AddReadFlags(
      &flags, [](InspectOptions & o) -> auto& { return o.read; });
  flags.Add("json", kJsonHelp,
            [](InspectOptions& o) -> bool& { return o.json; });
  flags.Add(
      "node",
      "nodes to show in full: op, outputs, cost, op_name, source "
      "file:line (function), sharding (names as the file gives them)",
      [](InspectOptions& o) -> std::vector<std::string>& { return o.nodes; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, InspectOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  return CheckRead(o->read);
}

FlagSet<ConvertOptions> Flags(ConvertOptions*) {
  FlagSet<ConvertOptions> flags;
  AddReadFlags(
      &flags, [](ConvertOptions & o) -> auto& { return o.read; });
  flags.Add("out", "output path (.json writes JSON, else binary); required",
            [](ConvertOptions& o) -> std::string& { return o.out_path; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, ConvertOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  RETURN_IF_ERROR(Require(o->out_path, "out"));
  return CheckRead(o->read);
}

FlagSet<SimulateOptions> Flags(SimulateOptions*) {
  using O = SimulateOptions;
  FlagSet<O> flags;
  AddReadFlags(
      &flags, [](auto& o) -> auto& { return o.read; });
  flags.Add("topology", kTopologyHelp,
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("method",
            "PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]] or best-baseline",
            [](O& o) -> std::string& { return o.method; });
  flags.Add("plan", "a plan JSON file (gopt.v1.Plan) instead of --method",
            [](O& o) -> std::string& { return o.plan_path; });
  flags.Add("trace", "write a Chrome trace (Perfetto / chrome://tracing)",
            [](O& o) -> std::string& { return o.trace_path; });
  flags.Add("repeat", "runs; the median simulation time is reported",
            [](O& o) -> int& { return o.repeat; });
  flags.Add("seed", "seed for random baselines",
            [](O& o) -> uint64_t& { return o.seed; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, SimulateOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  if (o->repeat < 1) {
    return absl::InvalidArgumentError("--repeat must be >= 1");
  }
  return CheckRead(o->read);
}

FlagSet<BenchCommandOptions> Flags(BenchCommandOptions*) {
  using O = BenchCommandOptions;
  FlagSet<O> flags;
  AddReadFlags(
      &flags, [](auto& o) -> auto& { return o.read; });
  flags.Add("graph", "graph files, or gen:PRESET for a generated graph",
            [](O& o) -> std::vector<std::string>& { return o.sources; });
  flags.Add("topology", kTopologyHelp,
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("methods",
            "methods (empty: the standard baselines + best-baseline)",
            [](O& o) -> std::vector<std::string>& { return o.methods; });
  flags.Add("seed", "seed for random baselines and the policy's sampling",
            [](O& o) -> uint64_t& { return o.seed; });
  flags.Add("policy_dir", "where the GO policy's directory is",
            [](O& o) -> std::string& { return o.policy_dir; });
  flags.Add("go_policy",
            "the go-* methods' policy: a sub-directory of --policy_dir "
            "(default: the newest GO policy there, the one gopt-server "
            "serves)",
            [](O& o) -> std::string& { return o.go_policy; });
  flags.Add("fine_tune_steps", "go-finetune*: PPO steps at most",
            [](O& o) -> int& { return o.fine_tune_steps; });
  flags.Add(
      "go_samples",
      "go-*: plans the policy decodes besides its greedy one (one-device, "
      "hint and co-location placements, then samples), the best by "
      "simulation",
      [](O& o) -> int& { return o.go_samples; });
  flags.Add("search_simulations",
            "go-finetune*: plans the local search simulates after each "
            "PPO step (0 = PPO fine-tuning alone)",
            [](O& o) -> int& { return o.search_simulations; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, BenchCommandOptions* o) {
  // Operands first, then --graph values.
  o->sources.insert(o->sources.begin(), operands.begin(), operands.end());
  if (o->sources.empty()) {
    return absl::InvalidArgumentError(
        "no graphs: pass FILE... or --graph=FILE,gen:PRESET");
  }
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  for (const std::string& method : o->methods) {
    if (method == "best-baseline" || IsGoMethod(method)) continue;
    RETURN_IF_ERROR(
        simulator::baselines::ParseBaselineMethod(registry, method).status());
  }
  if (o->fine_tune_steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--fine_tune_steps must be 1 or more, got ", o->fine_tune_steps));
  }
  if (o->go_samples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--go_samples must be 0 or more, got ", o->go_samples));
  }
  if (o->search_simulations < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--search_simulations must be 0 or more, got ", o->search_simulations));
  }
  return CheckRead(o->read);
}

FlagSet<CalibrateOptions> Flags(CalibrateOptions*) {
  using O = CalibrateOptions;
  FlagSet<O> flags;
  flags.Add("out", "the topology JSON to write; required",
            [](O& o) -> std::string& { return o.out_path; });
  flags.Add("executors", "CPU executors (0 = one per hardware thread)",
            [](O& o) -> int& { return o.cpu_executors; });
  flags.Add("quick", "fewer, smaller benchmarks (a smoke run)",
            [](O& o) -> bool& { return o.quick; });
  flags.Add("min_measure_seconds", "measured seconds per benchmark",
            [](O& o) -> double& { return o.min_measure_seconds; });
  flags.Add("json", "print the measurements as JSON",
            [](O& o) -> bool& { return o.json; });
  flags.Add("only",
            "re-measure one part (links, transfer-overhead, fusion) on top "
            "of --topology's calibration",
            [](O& o) -> std::string& { return o.only; });
  flags.Add("topology", "with --only: the calibration JSON to update",
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("learn",
            "then measure ~20 plans of many graphs and train the learned "
            "runtime model the topology references (docs/runtime-model.md)",
            [](O& o) -> bool& { return o.learn; });
  flags.Add("learn_dir",
            "with --learn: the measurements directory (resumable; default "
            "OUT.runtime-data)",
            [](O& o) -> std::string& { return o.learn_dir; });
  flags.Add("learn_graphs",
            "with --learn: graph files to measure and train on, beside the "
            "generated ones (comma-separated or repeated)",
            [](O& o) -> std::vector<std::string>& { return o.learn_graphs; });
  flags.Add("held_out",
            "with --learn: graph files measured and judged, never trained on",
            [](O& o) -> std::vector<std::string>& { return o.held_out; });
  flags.Add("learn_generated",
            "with --learn: measure the generated training steps too "
            "(false: only --learn_graphs and --held_out)",
            [](O& o) -> bool& { return o.learn_generated; });
  flags.Add("learn_plans", "with --learn: plans per graph (0 = all 20)",
            [](O& o) -> int& { return o.learn_plans; });
  flags.Add("seed", "with --learn: seed of the plans and the model",
            [](O& o) -> uint64_t& { return o.seed; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, CalibrateOptions* o) {
  if (!o->only.empty() && o->topology.empty()) {
    return absl::InvalidArgumentError(
        "--only needs --topology=FILE (the calibration to update)");
  }
  if (!operands.empty()) {
    return absl::InvalidArgumentError("calibrate takes no operands");
  }
  if (o->cpu_executors < 0 || o->min_measure_seconds < 0) {
    return absl::InvalidArgumentError(
        "--executors and --min_measure_seconds must be 0 or more");
  }
  if (!o->learn && (!o->learn_dir.empty() || !o->learn_graphs.empty() ||
                    !o->held_out.empty() || o->learn_plans != 0)) {
    return absl::InvalidArgumentError(
        "--learn_dir, --learn_graphs, --held_out and --learn_plans need "
        "--learn");
  }
  if (o->learn && !o->only.empty()) {
    return absl::InvalidArgumentError("--learn and --only do not combine");
  }
  if (o->learn_plans < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--learn_plans must be 0 or more, got ", o->learn_plans));
  }
  return Require(o->out_path, "out");
}

FlagSet<GenerateOptions> Flags(GenerateOptions*) {
  using O = GenerateOptions;
  FlagSet<O> flags;
  flags.Add("preset", "a named preset (see 'generate list')",
            [](O& o) -> std::string& { return o.preset; });
  flags.Add("layers", "layers (0 = the family's default)",
            [](O& o) -> int& { return o.layers; });
  flags.Add("batch", "batch size (0 = default)",
            [](O& o) -> int& { return o.batch; });
  flags.Add("seq", "sequence/unroll length (0 = default)",
            [](O& o) -> int& { return o.seq; });
  flags.Add("hidden", "model width (0 = default)",
            [](O& o) -> int& { return o.hidden; });
  flags.Add("image_size", "image size (0 = default)",
            [](O& o) -> int& { return o.image_size; });
  flags.Add("seed", "generator seed (0 = the generator's default)",
            [](O& o) -> uint64_t& { return o.seed; });
  flags.Add("out", "output path (.json writes JSON, else binary); required",
            [](O& o) -> std::string& { return o.out_path; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, GenerateOptions* o) {
  if (operands.size() > 1 || (operands.empty() && o->preset.empty())) {
    return absl::InvalidArgumentError(
        "expected one FAMILY (or --preset=NAME, or 'list')");
  }
  if (!operands.empty()) o->family = operands[0];
  if (o->family == "list") return absl::OkStatus();
  RETURN_IF_ERROR(Require(o->out_path, "out"));
  if (!o->preset.empty()) {
    RETURN_IF_ERROR(
        simulator::generators::FindGeneratorPreset(o->preset).status());
  }
  const std::vector<std::string> families =
      simulator::generators::GeneratorFamilies();
  if (!o->family.empty() && std::find(families.begin(), families.end(),
                                      o->family) == families.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown family '", o->family,
                     "'; known: ", absl::StrJoin(families, ", ")));
  }
  return absl::OkStatus();
}

FlagSet<OptimizeOptions> Flags(OptimizeOptions*) {
  using O = OptimizeOptions;
  FlagSet<O> flags;
  AddRequestFlags(
      &flags, [](auto& o) -> auto& { return o.request; });
  AddRemoteFlags(
      &flags, [](auto& o) -> auto& { return o.remote; },
      /*required=*/false);
  flags.Add("policy_dir", kPolicyDirHelp,
            [](O& o) -> std::string& { return o.policy_dir; });
  flags.Add("progress", "stream progress events to stderr",
            [](O& o) -> bool& { return o.progress; });
  flags.Add("out", "write the chosen plan's JSON (gopt.v1.Plan) here",
            [](O& o) -> std::string& { return o.out_path; });
  flags.Add("verify",
            "run the top K distinct candidates (chosen, default, best "
            "baseline) on workers; the answer is the measured fastest",
            [](O& o) -> int& { return o.request.verify; });
  flags.Add("reward",
            "fine-tuning's reward: simulated (the simulator's step times) or "
            "measured (plans run on the workers; small graphs only)",
            [](O& o) -> std::string& { return o.request.reward; });
  flags.Add("max_reward_measurements",
            "with --reward=measured: most plans measured (0 = 64)",
            [](O& o) -> int& { return o.request.max_reward_measurements; });
  flags.Add("workers", kWorkersHelp,
            [](O& o) -> std::string& { return o.workers; });
  flags.Add("trace", "write a Chrome trace of the chosen plan",
            [](O& o) -> std::string& { return o.trace_path; });
  flags.Add("write", kWriteHelp,
            [](O& o) -> std::string& { return o.write_path; });
  flags.Add("schedule_as", kScheduleAsHelp,
            [](O& o) -> std::string& { return o.schedule_as; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  flags.Add("plan_store", kPlanStoreHelp,
            [](O& o) -> std::string& { return o.plan_store; });
  flags.Add("store",
            "use of the plan store: default, skip, read_only or refresh",
            [](O& o) -> std::string& { return o.request.store; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, OptimizeOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->request.path = operands[0];
  return CheckRead(o->request.read);
}

FlagSet<EvaluateOptions> Flags(EvaluateOptions*) {
  using O = EvaluateOptions;
  FlagSet<O> flags;
  AddReadFlags(
      &flags, [](auto& o) -> auto& { return o.read; });
  flags.Add("topology", kTopologyHelp,
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("plan",
            "the plan JSON file (gopt.v1.Plan); default: the plan embedded "
            "in FILE (written by --write or apply)",
            [](O& o) -> std::string& { return o.plan_path; });
  flags.Add("seed", "seed of the request",
            [](O& o) -> uint64_t& { return o.seed; });
  AddRemoteFlags(
      &flags, [](auto& o) -> auto& { return o.remote; },
      /*required=*/false);
  flags.Add("policy_dir", kPolicyDirHelp,
            [](O& o) -> std::string& { return o.policy_dir; });
  flags.Add("trace", "write a Chrome trace of the plan",
            [](O& o) -> std::string& { return o.trace_path; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, EvaluateOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  return CheckRead(o->read);
}

FlagSet<ApplyOptions> Flags(ApplyOptions*) {
  using O = ApplyOptions;
  FlagSet<O> flags;
  AddReadFlags(
      &flags, [](auto& o) -> auto& { return o.read; });
  flags.Add("topology", kTopologyHelp,
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("plan", "the plan JSON file (gopt.v1.Plan); required",
            [](O& o) -> std::string& { return o.plan_path; });
  flags.Add("write", kWriteHelp,
            [](O& o) -> std::string& { return o.write_path; });
  flags.Add("schedule_as", kScheduleAsHelp,
            [](O& o) -> std::string& { return o.schedule_as; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, ApplyOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  RETURN_IF_ERROR(Require(o->plan_path, "plan"));
  RETURN_IF_ERROR(Require(o->write_path, "write"));
  return CheckRead(o->read);
}

FlagSet<MeasureOptions> Flags(MeasureOptions*) {
  using O = MeasureOptions;
  FlagSet<O> flags;
  AddReadFlags(
      &flags, [](O & o) -> auto& { return o.read; });
  flags.Add("topology",
            "preset or topology JSON file whose devices are the worker's "
            "(cpu-host: this host's two CPU executors)",
            [](O& o) -> std::string& { return o.topology; });
  flags.Add("method",
            "PLACEMENT[+SCHEDULING[+FUSION]] or best-baseline: the plan",
            [](O& o) -> std::string& { return o.method; });
  flags.Add("plan", "a plan JSON file (gopt.v1.Plan) instead of --method",
            [](O& o) -> std::string& { return o.plan_path; });
  flags.Add("seed", "seed for random baselines",
            [](O& o) -> uint64_t& { return o.seed; });
  flags.Add("server", "gopt-server HOST:PORT to measure on (its workers)",
            [](O& o) -> std::string& { return o.server; });
  flags.Add("workers", kWorkersHelp,
            [](O& o) -> std::string& { return o.workers; });
  flags.Add("timeout", "seconds the measurement may take",
            [](O& o) -> double& { return o.timeout_seconds; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, MeasureOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 1, "exactly one FILE"));
  o->path = operands[0];
  if (!(o->timeout_seconds > 0)) {
    return absl::InvalidArgumentError("--timeout must be > 0");
  }
  return CheckRead(o->read);
}

FlagSet<PoliciesOptions> Flags(PoliciesOptions*) {
  FlagSet<PoliciesOptions> flags;
  AddRemoteFlags(
      &flags, [](PoliciesOptions & o) -> auto& { return o.remote; },
      /*required=*/true);
  flags.Add("json", kJsonHelp,
            [](PoliciesOptions& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, PoliciesOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 0, "no operands"));
  return Require(o->remote.server, "server");
}

FlagSet<PlansOptions> Flags(PlansOptions*) {
  using O = PlansOptions;
  FlagSet<O> flags;
  flags.Add("plan_store", kPlanStoreHelp,
            [](O& o) -> std::string& { return o.plan_store; });
  flags.Add("limit", "list: at most this many entries (0 = all)",
            [](O& o) -> int& { return o.limit; });
  flags.Add("unused_days",
            "prune: entries unused for this many days (0 = every entry)",
            [](O& o) -> double& { return o.unused_days; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, PlansOptions* o) {
  if (operands.empty() || operands.size() > 2) {
    return absl::InvalidArgumentError(
        "gopt plans: expected list, show KEY, export FILE, import FILE or "
        "prune");
  }
  o->action = operands[0];
  if (operands.size() == 2) o->argument = operands[1];
  return absl::OkStatus();
}

FlagSet<HealthOptions> Flags(HealthOptions*) {
  FlagSet<HealthOptions> flags;
  AddRemoteFlags(
      &flags, [](HealthOptions & o) -> auto& { return o.remote; },
      /*required=*/true);
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, HealthOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 0, "no operands"));
  return Require(o->remote.server, "server");
}

FlagSet<LoadCommandOptions> Flags(LoadCommandOptions*) {
  using O = LoadCommandOptions;
  FlagSet<O> flags;
  AddRequestFlags(
      &flags, [](auto& o) -> auto& { return o.request; });
  flags.Add("graph", "the graph file every request carries (exactly one)",
            [](O& o) -> std::string& { return o.request.path; });
  AddRemoteFlags(
      &flags, [](auto& o) -> auto& { return o.remote; },
      /*required=*/true);
  flags.Add("concurrency", "requests in flight at once",
            [](O& o) -> int& { return o.concurrency; });
  flags.Add("duration", "seconds to send requests for",
            [](O& o) -> double& { return o.duration_seconds; });
  flags.Add("requests", "stop after this many requests (0 = only --duration)",
            [](O& o) -> int64_t& { return o.max_requests; });
  flags.Add("json", kJsonHelp, [](O& o) -> bool& { return o.json; });
  return flags;
}

absl::Status Finish(std::vector<std::string> operands, LoadCommandOptions* o) {
  RETURN_IF_ERROR(ExpectOperands(operands, 0, "no operands (--graph=FILE)"));
  if (o->remote.server.empty() || o->request.path.empty()) {
    return absl::InvalidArgumentError(
        "load needs --server=HOST:PORT and one --graph=FILE");
  }
  return CheckRead(o->request.read);
}

// ---- The command table -----------------------------------------------------

using Table = util::CommandTable<CommandOptions>;

// Adds the command whose options are O: its flags (Flags) and operands
// (Finish) as declared above, and `run`, its body.
template <typename O>
void AddCommand(Table* table, const char* name, const char* usage,
                const char* summary,
                absl::Status (*run)(const O&, std::ostream&),
                std::string more_help = "") {
  table->Add<O>(
      name, usage, summary, Flags(static_cast<O*>(nullptr)),
      [](std::vector<std::string> operands, O* options) {
        return Finish(std::move(operands), options);
      },
      run, nullptr, std::move(more_help));
}

const Table& Commands() {
  static const Table* const kTable = [] {
    auto* table = new Table("gopt", kOverview);
    AddCommand<InspectOptions>(
        table, "inspect", "inspect FILE",
        "import a graph; print name, format, node/edge counts, total FLOPs "
        "and bytes, op-kind histogram and warnings",
        RunInspect);
    AddCommand<ConvertOptions>(
        table, "convert", "convert FILE --out=PATH",
        "import a graph and write it in gopt's own format", RunConvert);
    AddCommand<SimulateOptions>(
        table, "simulate", "simulate FILE",
        "simulate one plan (--method or --plan) on --topology: step time, "
        "lower bound, memory, transfers",
        RunSimulate);
    AddCommand<BenchCommandOptions>(
        table, "bench", "bench FILE...",
        "every baseline (or --methods) on every graph (also "
        "--graph=gen:PRESET): step time vs default and lower bound",
        RunBench, kGoMethodsHelp);
    AddCommand<GenerateOptions>(
        table, "generate", "generate FAMILY --out=PATH",
        "write a training-step graph of a model family; 'generate list' "
        "shows families and presets",
        RunGenerate);
    AddCommand<OptimizeOptions>(
        table, "optimize", "optimize FILE",
        "decide placement, scheduling, fusion (--tasks) on --topology: "
        "default vs every baseline vs the chosen plan (in-process, or on "
        "--server)",
        RunOptimize);
    AddCommand<EvaluateOptions>(
        table, "evaluate", "evaluate FILE [--plan=PLAN]",
        "simulate a plan (default: the one embedded in FILE) on --topology "
        "(--server)",
        RunEvaluate);
    AddCommand<ApplyOptions>(
        table, "apply", "apply FILE --plan=PLAN --write=OUT",
        "write a saved plan's decisions into FILE's own format (HLO "
        "shardings, TF devices, ONNX device configurations) as OUT",
        RunApply);
    AddCommand<MeasureOptions>(
        table, "measure", "measure FILE",
        "run one plan (--method or --plan) for real on a worker (--workers, "
        "or --server's pool) beside its prediction: predicted and measured "
        "step time, spread, real-op share",
        RunMeasure);
    AddCommand<PoliciesOptions>(
        table, "policies", "policies --server=HOST:PORT",
        "list the policies --server has loaded", RunPolicies);
    AddCommand<HealthOptions>(table, "health", "health --server=HOST:PORT",
                              "exit 0 only when --server reports SERVING",
                              RunHealth);
    AddCommand<LoadCommandOptions>(
        table, "load", "load --server=HOST:PORT --graph=FILE",
        "send the graph with --concurrency N for --duration S: throughput, "
        "p50/p90/p99, errors by code",
        RunLoadCommand);
    AddCommand<PlansOptions>(
        table, "plans", "plans list|show KEY|export FILE|import FILE|prune",
        "look inside the plan store (--plan_store, default "
        "~/.cache/gopt/plans.sqlite) and move entries between stores",
        RunPlans);
    AddCommand<CalibrateOptions>(
        table, "calibrate", "calibrate --out=FILE",
        "measure this host's executors (matmul, convolution, bandwidth, "
        "dispatch, copies) and write a topology for --topology=FILE",
        RunCalibrate);
    return table;
  }();
  return *kTable;
}

}  // namespace

absl::StatusOr<Command> ParseCli(const std::vector<std::string>& args) {
  return Commands().Parse(args);
}

absl::StatusOr<Command> ParseCli(int argc, char** argv) {
  return ParseCli(std::vector<std::string>(argv, argv + argc));
}

std::string CliHelp(const std::string& command) {
  return Commands().Help(command);
}

absl::Status RunCommand(const Command& command, std::ostream& out) {
  return Commands().Run(command, out);
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnauthenticated:
      return 1;
    default:
      return 2;
  }
}

}  // namespace gopt::client
