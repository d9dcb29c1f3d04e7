#ifndef GOPT_UTIL_STATUS_MACROS_H_
#define GOPT_UTIL_STATUS_MACROS_H_

// Early-return helpers for absl::Status / absl::StatusOr, which abseil
// 20220623 does not ship.
//
//   RETURN_IF_ERROR(ValidateShape(shape));
//   ASSIGN_OR_RETURN(Graph graph, builder.Build(limits));

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GOPT_STATUS_CONCAT_INNER_(a, b) a##b
#define GOPT_STATUS_CONCAT_(a, b) GOPT_STATUS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    const ::absl::Status gopt_status_ = (expr);  \
    if (!gopt_status_.ok()) return gopt_status_; \
  } while (false)

#define GOPT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                \
  if (!statusor.ok()) return statusor.status();           \
  lhs = std::move(statusor).value()

#define ASSIGN_OR_RETURN(lhs, rexpr)                                         \
  GOPT_ASSIGN_OR_RETURN_IMPL_(GOPT_STATUS_CONCAT_(gopt_statusor_, __LINE__), \
                              lhs, rexpr)

namespace gopt {

// Returns `status` with `prefix + ": "` prepended to its message and the same
// code; OK stays OK. Used to add context (file, node, field) on the way up.
inline absl::Status Annotate(const absl::Status& status,
                             absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), std::string(prefix) + ": " +
                                         std::string(status.message()));
}

}  // namespace gopt

#endif  // GOPT_UTIL_STATUS_MACROS_H_
