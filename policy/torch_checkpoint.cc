#include "policy/torch_checkpoint.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gopt::policy {
namespace {

constexpr char kFormatVersionKey[] = "format_version";
constexpr char kOptionsKey[] = "options";

}  // namespace

void WriteCheckpointHeader(const CheckpointHeader& header,
                           torch::serialize::OutputArchive* archive) {
  archive->write(kFormatVersionKey, c10::IValue(header.format_version));
  archive->write(kOptionsKey, c10::IValue(header.options.dump()));
}

bool HasCheckpointHeader(torch::serialize::InputArchive& archive) {
  c10::IValue version;
  return archive.try_read(kFormatVersionKey, version);
}

absl::StatusOr<CheckpointHeader> ReadCheckpointHeader(
    torch::serialize::InputArchive& archive, int64_t oldest_version,
    int64_t newest_version, absl::StatusCode code, absl::string_view what,
    absl::string_view where) {
  c10::IValue version;
  if (!archive.try_read(kFormatVersionKey, version) || !version.isInt()) {
    return absl::Status(
        code, absl::StrCat(where, " is not a ", what, " (no format_version)"));
  }
  if (version.toInt() < oldest_version || version.toInt() > newest_version) {
    return absl::Status(
        code, absl::StrCat(where, " has format version ", version.toInt(),
                           "; this build reads ",
                           oldest_version == newest_version
                               ? absl::StrCat(newest_version)
                               : absl::StrCat("versions ", oldest_version,
                                              " to ", newest_version)));
  }
  c10::IValue options;
  if (!archive.try_read(kOptionsKey, options) || !options.isString()) {
    return absl::Status(code, absl::StrCat(where, " has no model options"));
  }
  CheckpointHeader header;
  header.format_version = version.toInt();
  header.options = nlohmann::json::parse(options.toStringRef(), /*cb=*/nullptr,
                                         /*allow_exceptions=*/false);
  if (header.options.is_discarded()) {
    return absl::Status(code,
                        absl::StrCat(where, ": model options are not JSON"));
  }
  return header;
}

}  // namespace gopt::policy
