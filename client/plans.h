#ifndef GOPT_CLIENT_PLANS_H_
#define GOPT_CLIENT_PLANS_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/plan_store.h"

namespace gopt::client {

// The CLI's plan store when --plan_store is empty:
// $XDG_CACHE_HOME/gopt/plans.sqlite, else $HOME/.cache/gopt/plans.sqlite;
// "" when neither variable is set.
std::string DefaultLocalPlanStore();

// Opens the store `spec` names (engine::OpenPlanStore): "" = the default
// above, "none" = no store (null). Errors as OpenPlanStore.
absl::StatusOr<std::shared_ptr<engine::PlanStore>> OpenCliPlanStore(
    const std::string& spec);

// gopt plans ACTION [ARG]: look inside a plan store and move entries
// between stores.
//   list             entries, most asked for first (--limit)
//   show KEY         one entry with its plan, as JSON (a unique key prefix
//                    is enough; an exact request key "x1-..." too)
//   export FILE      every entry, as length-delimited PlanStoreEntry records
//   import FILE      such records, each kept only where it is better
//   prune            entries unused for --unused_days (0 = every entry)
struct PlansOptions {
  std::string action;
  std::string argument;    // KEY or FILE
  std::string plan_store;  // as OpenCliPlanStore
  int limit = 0;           // list: at most this many (0 = all)
  double unused_days = 30;
  bool json = false;
};
// NotFound for an unknown key; InvalidArgument for an unknown action, a
// missing argument, an ambiguous key prefix or a malformed import file;
// the store's errors otherwise.
absl::Status RunPlans(const PlansOptions& options, std::ostream& out);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_PLANS_H_
