#include "client/plans.h"

#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/optimize_report.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

using engine::PlanStore;
using engine::PlanStoreEntry;

std::string EffortName(const gopt::v1::PlanProvenance& provenance) {
  switch (provenance.budget_mode()) {
    case gopt::v1::Budget::BASELINES_ONLY:
      return "baselines";
    case gopt::v1::Budget::FINE_TUNE:
      return absl::StrCat("fine-tune:", provenance.fine_tune_steps(), "/",
                          provenance.budget_seconds(), "s");
    default:
      return "zero-shot";
  }
}

std::string TimeText(int64_t unix_micros) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S",
                          absl::FromUnixMicros(unix_micros),
                          absl::UTCTimeZone());
}

absl::Status List(PlanStore* store, const PlansOptions& options,
                  std::ostream& out) {
  engine::PlanStoreFilter filter;
  filter.limit = options.limit;
  ASSIGN_OR_RETURN(std::vector<PlanStoreEntry> entries, store->List(filter));
  if (options.json) {
    out << "[";
    for (size_t i = 0; i < entries.size(); ++i) {
      out << (i == 0 ? "" : ",") << MessageToJson(entries[i]);
    }
    out << "]\n";
    return absl::OkStatus();
  }
  out << absl::StrFormat("%-18s %-24s %8s %-14s %12s %-28s %-18s %6s %s\n",
                         "KEY", "GRAPH", "NODES", "TOPOLOGY", "STEP (ms)",
                         "METHOD", "EFFORT", "HITS", "LAST USED (UTC)");
  for (const PlanStoreEntry& entry : entries) {
    out << absl::StrFormat(
        "%-18s %-24s %8d %-14s %12.4f %-28s %-18s %6d %s\n",
        entry.key().substr(0, 18), entry.graph_name().substr(0, 24),
        entry.num_nodes(), entry.topology_name().substr(0, 14),
        entry.step_time_s() * 1e3, entry.provenance().method().substr(0, 28),
        EffortName(entry.provenance()), entry.hits(),
        TimeText(entry.last_used_unix_micros()));
  }
  ASSIGN_OR_RETURN(engine::PlanStoreStats stats, store->Stats());
  out << stats.entries << " entries, " << stats.bytes << " bytes in "
      << store->Describe() << "\n";
  return absl::OkStatus();
}

// The entry whose key is `key` or starts with it (unique).
absl::StatusOr<PlanStoreEntry> Find(PlanStore* store, const std::string& key) {
  absl::StatusOr<PlanStoreEntry> entry = store->Lookup(key);
  if (!absl::IsNotFound(entry.status())) return entry;
  ASSIGN_OR_RETURN(std::vector<PlanStoreEntry> entries,
                   store->List(engine::PlanStoreFilter()));
  std::vector<std::string> matches;
  for (const PlanStoreEntry& listed : entries) {
    if (absl::StartsWith(listed.key(), key)) matches.push_back(listed.key());
  }
  if (matches.empty()) return entry.status();
  if (matches.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("gopt plans show: '", key, "' is the prefix of ",
                     matches.size(), " keys; give more of it"));
  }
  return store->Lookup(matches.front());
}

}  // namespace

std::string DefaultLocalPlanStore() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] != '\0') {
    return absl::StrCat(cache, "/gopt/plans.sqlite");
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.cache/gopt/plans.sqlite");
  }
  return "";
}

absl::StatusOr<std::shared_ptr<engine::PlanStore>> OpenCliPlanStore(
    const std::string& spec) {
  if (spec == "none") return nullptr;
  const std::string path = spec.empty() ? DefaultLocalPlanStore() : spec;
  if (path.empty()) {
    return absl::FailedPreconditionError(
        "no plan store: neither XDG_CACHE_HOME nor HOME is set (pass "
        "--plan_store=PATH or --plan_store=none)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<engine::PlanStore> store,
                   engine::OpenPlanStore(path));
  return std::shared_ptr<engine::PlanStore>(std::move(store));
}

absl::Status RunPlans(const PlansOptions& options, std::ostream& out) {
  const bool needs_argument = options.action == "show" ||
                              options.action == "export" ||
                              options.action == "import";
  if (needs_argument && options.argument.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gopt plans ", options.action, ": expected ",
                     options.action == "show" ? "a KEY" : "a FILE"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<PlanStore> store,
                   OpenCliPlanStore(options.plan_store));
  if (store == nullptr) {
    return absl::InvalidArgumentError(
        "gopt plans: --plan_store=none names no store");
  }
  if (options.action == "list") return List(store.get(), options, out);
  if (options.action == "show") {
    ASSIGN_OR_RETURN(PlanStoreEntry entry, Find(store.get(), options.argument));
    out << MessageToJson(entry) << "\n";
    return absl::OkStatus();
  }
  if (options.action == "export") {
    std::ofstream file(options.argument, std::ios::binary | std::ios::trunc);
    if (!file) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gopt plans export: cannot write '", options.argument, "'"));
    }
    ASSIGN_OR_RETURN(int64_t written,
                     engine::ExportEntries(store.get(), &file));
    file.close();
    if (!file) {
      return absl::InternalError(absl::StrCat("gopt plans export: writing '",
                                              options.argument, "' failed"));
    }
    out << "exported " << written << " entries from " << store->Describe()
        << " to " << options.argument << "\n";
    return absl::OkStatus();
  }
  if (options.action == "import") {
    std::ifstream file(options.argument, std::ios::binary);
    if (!file) {
      return absl::NotFoundError(absl::StrCat(
          "gopt plans import: cannot read '", options.argument, "'"));
    }
    absl::StatusOr<int64_t> improved =
        engine::ImportEntries(&file, store.get());
    if (!improved.ok()) {
      return absl::Status(improved.status().code(),
                          absl::StrCat("'", options.argument,
                                       "': ", improved.status().message()));
    }
    out << "imported " << options.argument << " into " << store->Describe()
        << ": " << *improved << " entries new or better\n";
    return absl::OkStatus();
  }
  if (options.action == "prune") {
    if (!(options.unused_days >= 0)) {
      return absl::InvalidArgumentError(
          "gopt plans prune: --unused_days must be >= 0");
    }
    engine::PlanStoreFilter filter;
    if (options.unused_days > 0) {
      filter.unused_since = absl::Now() - absl::Hours(24) * options.unused_days;
    }
    ASSIGN_OR_RETURN(int64_t removed, store->Prune(filter));
    out << "pruned " << removed << " entries from " << store->Describe()
        << "\n";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("gopt plans: unknown action '", options.action,
                   "'; expected list, show, export, import or prune"));
}

}  // namespace gopt::client
