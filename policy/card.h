#ifndef GOPT_POLICY_CARD_H_
#define GOPT_POLICY_CARD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gopt::policy {

// The card's field `key` as text: a string as it is, an integer in decimal
// (a card may say "version": 2), `fallback` when the field is absent, of
// another type, or the card is not an object. Never throws (nlohmann's
// value() throws on a type mismatch, and no exception may cross into the
// server). Thread-safe.
std::string CardText(const nlohmann::json& card, absl::string_view key,
                     absl::string_view fallback);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_CARD_H_
