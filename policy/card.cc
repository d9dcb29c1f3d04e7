#include "policy/card.h"

namespace gopt::policy {

std::string CardText(const nlohmann::json& card, absl::string_view key,
                     absl::string_view fallback) {
  if (!card.is_object()) return std::string(fallback);
  const auto it = card.find(std::string(key));
  if (it == card.end()) return std::string(fallback);
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return std::string(fallback);
}

}  // namespace gopt::policy
