#include "training/cost_model/npy.h"

#include <zip.h>

#include <cstring>
#include <limits>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/status_macros.h"

namespace gopt::policy::cost_model {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 31;

// Reads a little-endian unsigned integer of `size` bytes.
uint64_t ReadLittleEndian(const unsigned char* p, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

// Finds `'key':` in the header dict and returns the text after it, up to the
// next top-level comma (a tuple's commas are inside parentheses).
absl::StatusOr<std::string> DictValue(absl::string_view header,
                                      absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  const size_t at = header.find(quoted);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("header has no '", key, "' entry: ", header));
  }
  size_t pos = header.find(':', at + quoted.size());
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("header entry '", key, "' has no value"));
  }
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || (c == '}' && depth == 0)) break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(pos, end - pos)));
}

absl::StatusOr<std::vector<int64_t>> ParseShape(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "(") || !absl::ConsumeSuffix(&text, ")")) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape is not a tuple: ", text));
  }
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape dimension '", part, "' is not a count"));
    }
    shape.push_back(dim);
  }
  return shape;
}

template <typename T>
T LoadValue(const unsigned char* p, bool swap) {
  unsigned char buffer[sizeof(T)];
  std::memcpy(buffer, p, sizeof(T));
  if (swap) {
    for (size_t i = 0; i < sizeof(T) / 2; ++i) {
      std::swap(buffer[i], buffer[sizeof(T) - 1 - i]);
    }
  }
  T value;
  std::memcpy(&value, buffer, sizeof(T));
  return value;
}

}  // namespace

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) {
    return absl::InvalidArgumentError(
        "not a .npy file: it does not start with \\x93NUMPY");
  }
  const int major = data[6];
  if (major < 1 || major > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported .npy format version ", major, ".", data[7]));
  }
  const int length_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + length_bytes;
  if (bytes.size() < prefix) {
    return absl::InvalidArgumentError(".npy header length is truncated");
  }
  const uint64_t header_length = ReadLittleEndian(data + 8, length_bytes);
  if (header_length > bytes.size() - prefix) {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy header says ", header_length, " bytes but only ",
                     bytes.size() - prefix, " follow"));
  }
  const absl::string_view header = bytes.substr(prefix, header_length);
  NpyArray array;
  ASSIGN_OR_RETURN(std::string descr, DictValue(header, "descr"));
  if (descr.size() < 4 || descr.front() != '\'' || descr.back() != '\'') {
    return absl::InvalidArgumentError(
        absl::StrCat("descr is not a quoted string: ", descr));
  }
  array.descr = descr.substr(1, descr.size() - 2);
  ASSIGN_OR_RETURN(std::string fortran, DictValue(header, "fortran_order"));
  if (fortran != "False") {
    return absl::InvalidArgumentError(
        absl::StrCat("fortran_order ", fortran, " is not supported"));
  }
  ASSIGN_OR_RETURN(std::string shape_text, DictValue(header, "shape"));
  ASSIGN_OR_RETURN(array.shape, ParseShape(shape_text));
  int64_t count = 1;
  for (int64_t d : array.shape) {
    if (d > 0 && count > kMaxElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", shape_text, " has more than 2^31 elements"));
    }
    count *= d;
  }

  const char order = array.descr[0];
  const char kind = array.descr[1];
  int size = 0;
  if (!absl::SimpleAtoi(absl::string_view(array.descr).substr(2), &size) ||
      (order != '<' && order != '>' && order != '|' && order != '=')) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", array.descr, "'"));
  }
  const bool swap = order == '>';
  const bool supported = (kind == 'f' && (size == 4 || size == 8)) ||
                         ((kind == 'i' || kind == 'u') &&
                          (size == 1 || size == 2 || size == 4 || size == 8)) ||
                         (kind == 'b' && size == 1);
  if (!supported) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", array.descr, "'"));
  }
  const size_t body = prefix + header_length;
  const uint64_t expected = static_cast<uint64_t>(count) * size;
  if (bytes.size() - body != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy data has ", bytes.size() - body, " bytes but shape ",
                     shape_text, " of ", array.descr, " needs ", expected));
  }
  const unsigned char* p = data + body;
  if (kind == 'f') {
    array.floats.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      array.floats[i] =
          size == 4 ? LoadValue<float>(p + i * 4, swap)
                    : static_cast<float>(LoadValue<double>(p + i * 8, swap));
    }
    return array;
  }
  array.ints.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* v = p + i * size;
    int64_t value = 0;
    if (kind == 'u' || kind == 'b') {
      switch (size) {
        case 1:
          value = v[0];
          break;
        case 2:
          value = LoadValue<uint16_t>(v, swap);
          break;
        case 4:
          value = LoadValue<uint32_t>(v, swap);
          break;
        default:
          value = static_cast<int64_t>(LoadValue<uint64_t>(v, swap));
      }
    } else {
      switch (size) {
        case 1:
          value = static_cast<int8_t>(v[0]);
          break;
        case 2:
          value = LoadValue<int16_t>(v, swap);
          break;
        case 4:
          value = LoadValue<int32_t>(v, swap);
          break;
        default:
          value = LoadValue<int64_t>(v, swap);
      }
    }
    array.ints[i] = value;
  }
  return array;
}

absl::StatusOr<std::map<std::string, NpyArray>> ParseNpz(
    absl::string_view bytes) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (source == nullptr) {
    const std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read .npz archive: ", message));
  }
  zip_t* archive = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (archive == nullptr) {
    const std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    zip_source_free(source);
    return absl::InvalidArgumentError(
        absl::StrCat("not a .npz (zip) archive: ", message));
  }
  zip_error_fini(&error);
  std::unique_ptr<zip_t, decltype(&zip_discard)> closer(archive, zip_discard);

  std::map<std::string, NpyArray> arrays;
  const zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, i, 0, &stat) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot stat .npz member ", i, ": ", zip_strerror(archive)));
    }
    std::string name = stat.name;
    if (!absl::EndsWith(name, ".npy")) continue;
    if (stat.size > static_cast<zip_uint64_t>(kMaxElements) * 8) {
      return absl::InvalidArgumentError(
          absl::StrCat("member '", name, "' is too large"));
    }
    zip_file_t* file = zip_fopen_index(archive, i, 0);
    if (file == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "member '", name, "': cannot open: ", zip_strerror(archive)));
    }
    std::string content(stat.size, '\0');
    const zip_int64_t read = zip_fread(file, content.data(), stat.size);
    const std::string read_error = zip_file_strerror(file);
    zip_fclose(file);
    if (read != static_cast<zip_int64_t>(stat.size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("member '", name, "': read ", read, " of ", stat.size,
                       " bytes: ", read_error));
    }
    absl::StatusOr<NpyArray> array = ParseNpy(content);
    if (!array.ok()) {
      return Annotate(array.status(), absl::StrCat("member '", name, "'"));
    }
    name.resize(name.size() - 4);
    arrays[name] = *std::move(array);
  }
  return arrays;
}

}  // namespace gopt::policy::cost_model
