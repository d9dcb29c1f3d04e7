#include "policy/checkpoint_integrity.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "policy/card.h"
#include "policy/sha256.h"

namespace gopt::policy {
namespace {

namespace fs = std::filesystem;

// card["checkpoint"], checked to be a non-empty path inside the policy
// directory.
absl::StatusOr<std::string> CheckpointName(const nlohmann::json& card) {
  absl::StatusOr<PolicyCard> fields = ParseCard(card);
  if (!fields.ok() || fields->checkpoint.empty()) {
    return absl::InvalidArgumentError(
        "card.json: 'checkpoint' is missing or not a non-empty string");
  }
  return fields->checkpoint;
}

// A file a card names must lie inside the policy directory: relative, with
// no ".." component.
absl::Status CheckRelativePath(const std::string& file) {
  const fs::path path(file);
  if (file.empty() || path.is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("card.json: '", file,
                     "' must be a path relative to the policy directory"));
  }
  for (const fs::path& part : path) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "card.json: '", file, "' must not leave the policy directory"));
    }
  }
  return absl::OkStatus();
}

bool IsSha256Hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

}  // namespace

absl::Status RecordCheckpointSha256(const std::string& directory,
                                    absl::string_view recorded_by,
                                    nlohmann::json* card) {
  absl::StatusOr<std::string> checkpoint = CheckpointName(*card);
  if (!checkpoint.ok()) return checkpoint.status();
  if (absl::Status safe = CheckRelativePath(*checkpoint); !safe.ok()) {
    return safe;
  }
  absl::StatusOr<std::string> hash =
      Sha256HexOfFile((fs::path(directory) / *checkpoint).string());
  if (!hash.ok()) return hash.status();
  (*card)[kCheckpointSha256Key] = {{*checkpoint, *hash}};
  (*card)[kCheckpointSha256RecordedByKey] = std::string(recorded_by);
  return absl::OkStatus();
}

absl::StatusOr<std::string> VerifiedCheckpointPath(const std::string& directory,
                                                   const nlohmann::json& card) {
  absl::StatusOr<std::string> checkpoint = CheckpointName(card);
  if (!checkpoint.ok()) return checkpoint.status();
  if (absl::Status safe = CheckRelativePath(*checkpoint); !safe.ok()) {
    return safe;
  }
  const auto hashes = card.find(kCheckpointSha256Key);
  if (hashes == card.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("card.json records no '", kCheckpointSha256Key,
                     "' for checkpoint '", *checkpoint,
                     "', so its weights cannot be verified; record it with "
                     "`gopt-train card-hash --policy_dir=",
                     directory, "`"));
  }
  if (!hashes->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("card.json: '", kCheckpointSha256Key,
                     "' must map file names to SHA-256 hex digests"));
  }
  if (!hashes->contains(*checkpoint)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "card.json: '", kCheckpointSha256Key, "' has no hash for checkpoint '",
        *checkpoint, "'; record it with `gopt-train card-hash --policy_dir=",
        directory, "`"));
  }
  for (const auto& [file, expected] : hashes->items()) {
    if (absl::Status safe = CheckRelativePath(file); !safe.ok()) return safe;
    if (!expected.is_string() || !IsSha256Hex(expected.get<std::string>())) {
      return absl::InvalidArgumentError(
          absl::StrCat("card.json: ", kCheckpointSha256Key, "['", file,
                       "'] must be 64 lowercase hex digits"));
    }
    const std::string path = (fs::path(directory) / file).string();
    absl::StatusOr<std::string> actual = Sha256HexOfFile(path);
    if (!actual.ok()) return actual.status();
    if (*actual != expected.get<std::string>()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint '", path, "' does not match its card: sha256 ", *actual,
          ", card.json records ", expected.get<std::string>(),
          " (the weights changed after the card was made; refusing to load "
          "them)"));
    }
  }
  return (fs::path(directory) / *checkpoint).string();
}

}  // namespace gopt::policy
