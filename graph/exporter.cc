#include "graph/exporter.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace gopt::graph {

void ExporterRegistry::Register(std::unique_ptr<Exporter> exporter) {
  exporters_.push_back(std::move(exporter));
}

void ExporterRegistry::ExplainMissing(std::string format, std::string reason) {
  missing_.emplace_back(std::move(format), std::move(reason));
}

absl::StatusOr<const Exporter*> ExporterRegistry::Find(
    absl::string_view format) const {
  std::vector<absl::string_view> formats;
  for (const auto& exporter : exporters_) {
    if (exporter->format() == format) return exporter.get();
    formats.push_back(exporter->format());
  }
  for (const auto& [missing, reason] : missing_) {
    if (missing == format) {
      return absl::UnimplementedError(
          absl::StrCat("no exporter writes format '", format, "': ", reason));
    }
  }
  return absl::UnimplementedError(
      absl::StrCat("no exporter writes format '", format,
                   "' (formats with one: ", absl::StrJoin(formats, ", "), ")"));
}

std::string SerializeDeterministically(
    const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

absl::StatusOr<int32_t> ParseDecisionInt(absl::string_view text,
                                         absl::string_view what) {
  int32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": '", text, "' is not an integer >= -1"));
  }
  return value;
}

}  // namespace gopt::graph
