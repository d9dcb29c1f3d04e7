#include "util/flag_set.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gopt::util {
namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view text,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", text, ": expected ", expected));
}

}  // namespace

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            std::string* value) {
  (void)flag;
  *value = std::string(text);
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            bool* value) {
  if (text == "true" || text == "1" || text == "yes") {
    *value = true;
  } else if (text == "false" || text == "0" || text == "no") {
    *value = false;
  } else {
    return BadValue(flag, text, "true or false");
  }
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            int32_t* value) {
  if (!absl::SimpleAtoi(text, value)) return BadValue(flag, text, "an integer");
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            int64_t* value) {
  if (!absl::SimpleAtoi(text, value)) return BadValue(flag, text, "an integer");
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            uint64_t* value) {
  if (!absl::SimpleAtoi(text, value)) {
    return BadValue(flag, text, "a non-negative integer");
  }
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            double* value) {
  if (!absl::SimpleAtod(text, value)) return BadValue(flag, text, "a number");
  return absl::OkStatus();
}

absl::Status ParseFlagValue(absl::string_view flag, absl::string_view text,
                            std::vector<std::string>* values) {
  (void)flag;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    values->emplace_back(item);
  }
  return absl::OkStatus();
}

std::string FormatFlagValue(const std::string& value) {
  return value.empty() ? "" : absl::StrCat("'", value, "'");
}
std::string FormatFlagValue(bool value) { return value ? "true" : "false"; }
std::string FormatFlagValue(int32_t value) { return absl::StrCat(value); }
std::string FormatFlagValue(int64_t value) { return absl::StrCat(value); }
std::string FormatFlagValue(uint64_t value) { return absl::StrCat(value); }
std::string FormatFlagValue(double value) { return absl::StrCat(value); }
std::string FormatFlagValue(const std::vector<std::string>& values) {
  return absl::StrJoin(values, ",");
}

}  // namespace gopt::util
