#include "graph/parse_cost.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/message.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Heap bytes the parse adds per element beyond the generated object: a
// std::string on the arena (plus its buffer past the 15-byte small-string
// capacity), a pointer slot of a repeated message field with growth slack,
// an unknown field's record and copy.
constexpr int64_t kStringObjectBytes = 32;
constexpr int64_t kSmallStringCapacity = 15;
constexpr int64_t kRepeatedSlotBytes = 16;
constexpr int64_t kUnknownFieldBytes = 48;
// A map entry's node in the parsed map (hash node, key and value slots).
constexpr int64_t kMapNodeBytes = 64;
// Repeated scalars grow by doubling: up to twice their element bytes.
constexpr int64_t kRepeatedScalarSlack = 2;

int64_t StringBytes(int64_t length) {
  return kStringObjectBytes + (length > kSmallStringCapacity ? length + 1 : 0);
}

int64_t ScalarBytes(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return 8;
    case FieldDescriptor::CPPTYPE_BOOL:
      return 1;
    default:
      return 4;
  }
}

// Wire bytes of one packed element of `field`'s type; 0 for varints.
int FixedWireBytes(const FieldDescriptor& field) {
  switch (field.type()) {
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return 8;
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
      return 4;
    default:
      return 0;
  }
}

class ProtoScanner {
 public:
  ProtoScanner(absl::string_view all, const NodeTypes& node_types,
               const ParseCostLimits& limits)
      : all_(all), node_types_(node_types), limits_(limits) {}

  absl::Status Scan(absl::string_view bytes, const Descriptor* type,
                    int depth) {
    if (depth > limits_.max_depth) {
      return absl::InvalidArgumentError(
          absl::StrCat("messages nest deeper than ", limits_.max_depth,
                       " levels at byte offset ", Offset(bytes), " (",
                       type->full_name(), ")"));
    }
    cost_.depth = std::max(cost_.depth, depth);
    ++cost_.messages;
    cost_.bytes += ObjectBytes(type);
    if (type == node_types_.never_empty && bytes.empty() &&
        first_empty_node_ < 0) {
      first_empty_node_ = static_cast<int64_t>(Offset(bytes));
    }
    if (std::find(node_types_.counted.begin(), node_types_.counted.end(),
                  type) != node_types_.counted.end()) {
      if (++cost_.nodes > limits_.max_nodes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the file holds more than ", limits_.max_nodes, " ",
            type->full_name(), " elements (counted before parsing, at byte ",
            Offset(bytes), "); the limit is ", limits_.max_nodes));
      }
    }
    size_t pos = 0;
    while (pos < bytes.size()) {
      const size_t field_start = pos;
      uint64_t tag = 0;
      if (!ReadVarint(bytes, &pos, &tag) || (tag >> 3) == 0) {
        return Malformed(bytes, field_start, type, "a field tag is invalid");
      }
      const int number =
          static_cast<int>(std::min<uint64_t>(tag >> 3, 1 << 29));
      const FieldDescriptor* field = type->FindFieldByNumber(number);
      switch (tag & 7) {
        case 0: {  // varint
          uint64_t value = 0;
          if (!ReadVarint(bytes, &pos, &value)) {
            return Malformed(bytes, field_start, type, "a varint is cut short");
          }
          AddScalar(field);
          break;
        }
        case 1:
        case 5: {  // fixed64, fixed32
          const size_t width = (tag & 7) == 1 ? 8 : 4;
          if (bytes.size() - pos < width) {
            return Malformed(bytes, field_start, type,
                             "a fixed field is cut short");
          }
          pos += width;
          AddScalar(field);
          break;
        }
        case 2: {  // length-delimited
          uint64_t length = 0;
          if (!ReadVarint(bytes, &pos, &length) ||
              length > bytes.size() - pos) {
            return Malformed(
                bytes, field_start, type,
                absl::StrCat("field ", number, " is longer than its message"));
          }
          const absl::string_view payload = bytes.substr(pos, length);
          pos += length;
          RETURN_IF_ERROR(AddLengthDelimited(field, payload, depth));
          break;
        }
        default:
          return Malformed(bytes, field_start, type,
                           absl::StrCat("field ", number, " has wire type ",
                                        tag & 7, " (groups are not accepted)"));
      }
    }
    return absl::OkStatus();
  }

  const ParseCost& cost() const { return cost_; }
  // Byte offset of the first empty operator element; -1 = none.
  int64_t first_empty_node() const { return first_empty_node_; }

 private:
  static bool ReadVarint(absl::string_view bytes, size_t* pos,
                         uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (*pos >= bytes.size()) return false;
      const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
      *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  size_t Offset(absl::string_view part, size_t pos = 0) const {
    return static_cast<size_t>(part.data() - all_.data()) + pos;
  }

  absl::Status Malformed(absl::string_view part, size_t pos,
                         const Descriptor* type, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ", type->full_name(), " at byte offset ",
                     Offset(part, pos), ": ", what));
  }

  int64_t ObjectBytes(const Descriptor* type) {
    auto [it, inserted] = object_bytes_.try_emplace(type, 0);
    if (inserted) {
      // A map entry is parsed into the map's own node (key, value), not a
      // message object; its prototype cannot even report its size.
      const google::protobuf::Message* prototype =
          type->options().map_entry()
              ? nullptr
              : google::protobuf::MessageFactory::generated_factory()
                    ->GetPrototype(type);
      it->second = prototype == nullptr
                       ? kMapNodeBytes
                       : static_cast<int64_t>(prototype->SpaceUsedLong());
    }
    return it->second;
  }

  // A varint or fixed field: only repeated ones (and unknown ones) allocate.
  void AddScalar(const FieldDescriptor* field) {
    if (field == nullptr) {
      cost_.bytes += kUnknownFieldBytes;
    } else if (field->is_repeated()) {
      cost_.bytes += ScalarBytes(*field) * kRepeatedScalarSlack;
    }
  }

  absl::Status AddLengthDelimited(const FieldDescriptor* field,
                                  absl::string_view payload, int depth) {
    if (field == nullptr) {
      cost_.bytes += kUnknownFieldBytes + static_cast<int64_t>(payload.size());
      return absl::OkStatus();
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) cost_.bytes += kRepeatedSlotBytes;
      return Scan(payload, field->message_type(), depth + 1);
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      cost_.bytes += StringBytes(static_cast<int64_t>(payload.size()));
      if (field->is_repeated()) cost_.bytes += kRepeatedSlotBytes;
      return absl::OkStatus();
    }
    // A packed repeated scalar: count its elements.
    int64_t elements = 0;
    if (const int width = FixedWireBytes(*field); width > 0) {
      elements = static_cast<int64_t>(payload.size()) / width;
    } else {
      for (char c : payload) elements += (static_cast<uint8_t>(c) & 0x80) == 0;
    }
    cost_.bytes += elements * ScalarBytes(*field) * kRepeatedScalarSlack;
    return absl::OkStatus();
  }

  const absl::string_view all_;
  const NodeTypes& node_types_;
  const ParseCostLimits& limits_;
  ParseCost cost_;
  int64_t first_empty_node_ = -1;
  absl::flat_hash_map<const Descriptor*, int64_t> object_bytes_;
};

// JSON parsed into a protobuf message: protobuf's JSON reader turns the
// text into the binary encoding and then parses that, so a value costs its
// share of both; an object becomes a message.
constexpr int64_t kJsonBytesPerObject = 320;
constexpr int64_t kJsonBytesPerValue = 48;
constexpr int64_t kJsonCopiesOfText = 2;

absl::Status TooDeep(const ParseCostLimits& limits, absl::string_view where) {
  return absl::InvalidArgumentError(absl::StrCat("the text nests deeper than ",
                                                 limits.max_depth, " levels (",
                                                 where, ")"));
}

absl::Status TooManyNodes(const ParseCostLimits& limits,
                          absl::string_view where) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the file holds more than ", limits.max_nodes,
                   " nodes (counted before parsing, ", where,
                   "); the limit is ", limits.max_nodes));
}

}  // namespace

google::protobuf::ArenaOptions ImportArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 4 << 20;
  return options;
}

absl::StatusOr<ParseCost> ProtoParseCost(absl::string_view bytes,
                                         const Descriptor* root,
                                         const NodeTypes& node_types,
                                         const ParseCostLimits& limits) {
  ProtoScanner scanner(bytes, node_types, limits);
  RETURN_IF_ERROR(scanner.Scan(bytes, root, /*depth=*/1));
  if (scanner.first_empty_node() >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an empty ", node_types.never_empty->full_name(),
                     " at byte offset ", scanner.first_empty_node(),
                     ": every operator has at least a name or an op"));
  }
  return scanner.cost();
}

absl::StatusOr<ParseCost> JsonParseCost(absl::string_view text,
                                        absl::string_view node_key,
                                        const ParseCostLimits& limits) {
  ParseCost cost;
  int64_t values = 0;
  // One entry per open object or array: whether it is an array of nodes.
  std::vector<bool> node_array;
  // The last string closed was an object key equal to `node_key`, and no
  // value has started since.
  bool after_node_key = false;
  // Offset of the first node object with nothing in it; npos = none.
  size_t first_empty_node = absl::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const size_t start = i + 1;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      const absl::string_view word =
          text.substr(start, std::min(i, text.size()) - start);
      size_t next = i + 1;
      while (next < text.size() && (text[next] == ' ' || text[next] == '\n' ||
                                    text[next] == '\r' || text[next] == '\t')) {
        ++next;
      }
      const bool is_key = next < text.size() && text[next] == ':';
      after_node_key = is_key && word == node_key;
      if (!is_key) ++values;
      cost.bytes += StringBytes(static_cast<int64_t>(word.size()));
    } else if (c == '{' || c == '[') {
      if (static_cast<int>(node_array.size()) >= limits.max_depth) {
        return TooDeep(limits, absl::StrCat("at byte offset ", i));
      }
      if (c == '{') {
        ++cost.messages;
        if (!node_array.empty() && node_array.back()) {
          if (++cost.nodes > limits.max_nodes) {
            return TooManyNodes(limits, absl::StrCat("at byte offset ", i));
          }
          const size_t next = text.find_first_not_of(" \t\r\n", i + 1);
          if (next != absl::string_view::npos && text[next] == '}' &&
              first_empty_node == absl::string_view::npos) {
            first_empty_node = i;
          }
        }
      }
      node_array.push_back(c == '[' && after_node_key);
      after_node_key = false;
      cost.depth = std::max(cost.depth, static_cast<int>(node_array.size()));
    } else if (c == '}' || c == ']') {
      if (!node_array.empty()) node_array.pop_back();
    } else if (c == ',' || c == ':') {
      ++values;
    }
  }
  if (first_empty_node != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an empty node object ({}) in '", node_key, "' at byte offset ",
        first_empty_node, ": every node has at least a name and an op"));
  }
  cost.bytes += cost.messages * kJsonBytesPerObject +
                values * kJsonBytesPerValue +
                kJsonCopiesOfText * static_cast<int64_t>(text.size());
  return cost;
}

absl::StatusOr<ParseCost> TextParseCost(absl::string_view text,
                                        absl::string_view node_marker,
                                        int64_t bytes_per_node,
                                        const ParseCostLimits& limits) {
  ParseCost cost;
  int depth = 0;
  int64_t line = 1;
  size_t line_start = 0;
  const auto end_line = [&](size_t end) -> absl::Status {
    if (text.substr(line_start, end - line_start).find(node_marker) !=
            absl::string_view::npos &&
        ++cost.nodes > limits.max_nodes) {
      return TooManyNodes(limits, absl::StrCat("at line ", line));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      // A quoted string may hold braces and newlines; skip it whole, but
      // let the marker match inside it (an upper bound is what counts).
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '{') {
      if (++depth > limits.max_depth) {
        return TooDeep(limits, absl::StrCat("at line ", line));
      }
      ++cost.messages;
      cost.depth = std::max(cost.depth, depth);
    } else if (c == '}') {
      depth = std::max(depth - 1, 0);
    } else if (c == '\n') {
      RETURN_IF_ERROR(end_line(i));
      ++line;
      line_start = i + 1;
    }
  }
  RETURN_IF_ERROR(end_line(text.size()));
  cost.bytes = cost.nodes * bytes_per_node + static_cast<int64_t>(text.size());
  return cost;
}

}  // namespace gopt::graph
