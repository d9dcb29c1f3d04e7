// Structure-aware mutations for request_fuzzer.cc (libFuzzer builds only).
//
// Byte-level mutation of a protobuf rarely yields a valid message with a
// changed number inside a nested topology (every enclosing length prefix
// must stay right), so half of the mutations parse the input as the
// request it encodes and change one field to a value that tends to break
// arithmetic (inf, NaN, denormals, 0, negatives, huge, INT_MIN...), or
// byte-mutate the graph's serialized bytes inside an intact envelope. The
// other half are libFuzzer's own.
//
// The graph itself gets the hostile classes of issue #37, structure-aware
// in every format: a binary graph (hlo-proto, onnx, graphdef, gopt,
// tpugraphs, and the inline gopt.v1.Graph) is parsed as its format's
// message and changed through reflection (a declared count or dimension
// set to an extreme, a repeated field grown to thousands of elements,
// a recursive field nested past every depth limit, names copied between
// elements); a text graph (HLO, JSON, protobuf text) gets extreme numbers,
// deep runs of ( { [, shapes of huge rank and lines repeated thousands of
// times, all inside an intact request.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "gopt/v1/optimizer.pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::minstd_rand;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

double InterestingDouble(Rng& rng) {
  constexpr double kValues[] = {
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN(),
      std::numeric_limits<double>::denorm_min(),
      1e-320,
      std::numeric_limits<double>::min(),
      0.0,
      -0.0,
      -1.0,
      1e-300,
      1e-9,
      1.0,
      1e9,
      1e300,
      1e308,
      std::numeric_limits<double>::max(),
  };
  if (rng() % 4 == 0) {
    // A plausible value, scaled by a random power of ten.
    return static_cast<double>(rng() % 1000) *
           std::pow(10.0, static_cast<int>(rng() % 40) - 20);
  }
  return kValues[rng() % std::size(kValues)];
}

int64_t InterestingInt(Rng& rng) {
  constexpr int64_t kValues[] = {
      0,
      1,
      -1,
      2,
      3,
      7,
      255,
      65535,
      1 << 20,
      1LL << 31,
      -(1LL << 31),
      (1LL << 31) - 1,
      1LL << 40,
      1LL << 62,
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(),
  };
  return kValues[rng() % std::size(kValues)];
}

int32_t InterestingInt32(Rng& rng) {
  return static_cast<int32_t>(InterestingInt(rng));
}

void MutateDevice(gopt::v1::DeviceProfile* device, Rng& rng) {
  const double value = InterestingDouble(rng);
  switch (rng() % 9) {
    case 0:
      device->set_peak_f32_flops(value);
      break;
    case 1:
      device->set_peak_f16_flops(value);
      break;
    case 2:
      device->set_peak_f64_flops(value);
      break;
    case 3:
      device->set_peak_int8_ops(value);
      break;
    case 4:
      device->set_memory_bandwidth_bytes_per_s(value);
      break;
    case 5:
      device->set_memory_bytes(InterestingInt(rng));
      break;
    case 6:
      device->set_launch_overhead_s(value);
      break;
    case 7:
      device->set_max_efficiency(value);
      break;
    default: {
      constexpr const char* kKinds[] = {"cpu", "gpu", "tpu", "", "fpga"};
      device->set_kind(kKinds[rng() % std::size(kKinds)]);
      break;
    }
  }
}

void MutateLink(gopt::v1::Link* link, Rng& rng) {
  switch (rng() % 4) {
    case 0:
      link->set_src(InterestingInt32(rng) % 5);
      break;
    case 1:
      link->set_dst(rng() % 2 ? InterestingInt32(rng) : rng() % 4);
      break;
    case 2:
      link->set_bandwidth_bytes_per_s(InterestingDouble(rng));
      break;
    default:
      link->set_latency_s(InterestingDouble(rng));
      break;
  }
}

// A two-device machine to mutate from, for requests that name a preset.
void SetExplicitTopology(gopt::v1::TopologyInput* input, Rng& rng) {
  gopt::v1::Topology* topology = input->mutable_topology();
  topology->set_name("mutated");
  const int devices = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < devices; ++i) {
    gopt::v1::DeviceProfile* device = topology->add_devices();
    device->set_kind("gpu");
    device->set_peak_f32_flops(1.5e13);
    device->set_memory_bandwidth_bytes_per_s(9e11);
    device->set_memory_bytes(int64_t{16} << 30);
    device->set_launch_overhead_s(5e-6);
  }
  topology->mutable_default_link()->set_bandwidth_bytes_per_s(1.6e10);
  topology->mutable_default_link()->set_latency_s(1e-5);
}

void MutateTopology(gopt::v1::TopologyInput* input, Rng& rng) {
  if (!input->has_topology() || rng() % 8 == 0) {
    if (rng() % 3 == 0) {
      constexpr const char* kPresets[] = {"cpu-host",
                                          "v100x2-pcie",
                                          "v100x4-nvlink",
                                          "a100x8-nvlink",
                                          "h100x8-nvlink",
                                          "tpuv3x8",
                                          "",
                                          "nope"};
      input->set_preset(kPresets[rng() % std::size(kPresets)]);
      return;
    }
    SetExplicitTopology(input, rng);
  }
  gopt::v1::Topology* topology = input->mutable_topology();
  const uint32_t choice = rng() % 8;
  if (choice < 4 && topology->devices_size() > 0) {
    MutateDevice(topology->mutable_devices(rng() % topology->devices_size()),
                 rng);
    // Sometimes every device at once (a placer must find no usable device).
    if (rng() % 4 == 0) {
      const gopt::v1::DeviceProfile first = topology->devices(0);
      for (auto& device : *topology->mutable_devices()) device = first;
    }
  } else if (choice < 6) {
    gopt::v1::Link* link =
        rng() % 3 == 0 || topology->links_size() == 0
            ? (rng() % 2 ? topology->add_links()
                         : topology->mutable_default_link())
            : topology->mutable_links(rng() % topology->links_size());
    MutateLink(link, rng);
  } else if (choice == 6 && topology->devices_size() > 0) {
    // Many copies of a device (up to 64).
    const int copies = 1 + static_cast<int>(rng() % 64);
    const gopt::v1::DeviceProfile device = topology->devices(0);
    for (int i = 0; i < copies; ++i) *topology->add_devices() = device;
  } else {
    topology->clear_devices();
  }
}

// How many of something hostile to make: around the fuzzer's 2,000-node cap
// and the parse-cost scan's 64-level depth limit, or as many as fit.
size_t HostileCount(size_t fit, Rng& rng) {
  constexpr size_t kCounts[] = {2, 63, 64, 65, 101, 1999, 2001, 65536};
  const size_t count =
      rng() % 4 == 0 ? fit : kCounts[rng() % std::size(kCounts)];
  return std::min(count, fit);
}

// Every message of the tree under `message` (itself first), depth first,
// at most kMaxMessages of them.
void CollectMessages(Message* message, std::vector<Message*>* messages) {
  constexpr size_t kMaxMessages = 1 << 16;
  if (messages->size() >= kMaxMessages) return;
  messages->push_back(message);
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!field->is_repeated()) {
      CollectMessages(reflection->MutableMessage(message, field), messages);
      continue;
    }
    const int size = reflection->FieldSize(*message, field);
    for (int i = 0; i < size; ++i) {
      CollectMessages(reflection->MutableRepeatedMessage(message, field, i),
                      messages);
    }
  }
}

// A random field of `type` whose C++ type passes `accept`; null if none.
template <typename Accept>
const FieldDescriptor* PickField(const Descriptor* type, Rng& rng,
                                 Accept accept) {
  std::vector<const FieldDescriptor*> fields;
  for (int i = 0; i < type->field_count(); ++i) {
    if (accept(*type->field(i))) fields.push_back(type->field(i));
  }
  return fields.empty() ? nullptr : fields[rng() % fields.size()];
}

bool IsNumber(const FieldDescriptor& field) {
  return field.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE &&
         field.cpp_type() != FieldDescriptor::CPPTYPE_STRING;
}

// Sets (or, when repeated, sets one element of, or appends) `field` of
// `message` to an extreme value: a declared dimension, count, index, trip
// count, element type or cost.
void SetExtremeNumber(Message* message, const FieldDescriptor* field,
                      Rng& rng) {
  const Reflection* r = message->GetReflection();
  const int size = field->is_repeated() ? r->FieldSize(*message, field) : 0;
  const bool append = field->is_repeated() && (size == 0 || rng() % 4 == 0);
  const int index = size > 0 ? static_cast<int>(rng() % size) : 0;
  const int64_t integer = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 70) - 1
                                         : InterestingInt(rng);
  const double real = InterestingDouble(rng);
#define GOPT_SET_FIELD(Type, value)                     \
  if (!field->is_repeated()) {                          \
    r->Set##Type(message, field, value);                \
  } else if (append) {                                  \
    r->Add##Type(message, field, value);                \
  } else {                                              \
    r->SetRepeated##Type(message, field, index, value); \
  }
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      GOPT_SET_FIELD(Int32, static_cast<int32_t>(integer));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      GOPT_SET_FIELD(Int64, integer);
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      GOPT_SET_FIELD(UInt32, static_cast<uint32_t>(integer));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      GOPT_SET_FIELD(UInt64, static_cast<uint64_t>(integer));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      GOPT_SET_FIELD(EnumValue, static_cast<int>(integer));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      GOPT_SET_FIELD(Double, real);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      GOPT_SET_FIELD(Float, static_cast<float>(real));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      GOPT_SET_FIELD(Bool, rng() % 2 == 0);
      break;
    default:
      break;
  }
#undef GOPT_SET_FIELD
}

// Appends copies of one element of repeated `field` (or empty elements)
// until about `room` bytes are used: thousands of nodes, dimensions, inputs.
void GrowRepeated(Message* message, const FieldDescriptor* field, size_t room,
                  Rng& rng) {
  const Reflection* r = message->GetReflection();
  const int size = r->FieldSize(*message, field);
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
    // A shape of huge rank, a long packed list: one element, set to an
    // extreme first, repeated.
    SetExtremeNumber(message, field, rng);
    const int last = r->FieldSize(*message, field) - 1;
    const size_t count = HostileCount(room / 10, rng);
#define GOPT_REPEAT_LAST(Type)                                                 \
  for (size_t i = 0; i < count; ++i) {                                         \
    r->Add##Type(message, field, r->GetRepeated##Type(*message, field, last)); \
  }
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        GOPT_REPEAT_LAST(Int32);
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        GOPT_REPEAT_LAST(Int64);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        GOPT_REPEAT_LAST(UInt32);
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        GOPT_REPEAT_LAST(UInt64);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        GOPT_REPEAT_LAST(EnumValue);
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        GOPT_REPEAT_LAST(Double);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        GOPT_REPEAT_LAST(Float);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        GOPT_REPEAT_LAST(Bool);
        break;
      default:
        break;
    }
#undef GOPT_REPEAT_LAST
    return;
  }
  // Copies of one element, or (one time in four) empty elements.
  std::unique_ptr<Message> element;
  if (size > 0 && rng() % 4 != 0) {
    const Message& original =
        r->GetRepeatedMessage(*message, field, static_cast<int>(rng() % size));
    element.reset(original.New());
    element->CopyFrom(original);
  }
  const size_t element_bytes = (element ? element->ByteSizeLong() : 0) + 3;
  const size_t count = HostileCount(room / element_bytes, rng);
  // Copies keep their names unique when their type has a `name`, so an
  // importer sees many distinct nodes rather than one duplicate name.
  const FieldDescriptor* name = field->message_type()->FindFieldByName("name");
  const bool rename = element && name != nullptr && !name->is_repeated() &&
                      name->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  for (size_t i = 0; i < count; ++i) {
    Message* added = r->AddMessage(message, field);
    if (!element) continue;
    added->CopyFrom(*element);
    if (rename) {
      added->GetReflection()->SetString(
          added, name,
          element->GetReflection()->GetString(*element, name) + "_" +
              std::to_string(i));
    }
  }
}

// A path of message fields that leads from `type` back to `type` (at most
// four steps; e.g. ONNX GraphProto -> node -> attribute -> g), chosen at
// random among the first ones found; empty when `type` is not recursive.
std::vector<const FieldDescriptor*> RecursionPath(const Descriptor* type,
                                                  Rng& rng) {
  constexpr size_t kMaxSteps = 4;
  constexpr size_t kMaxPaths = 16;
  std::vector<std::vector<const FieldDescriptor*>> found;
  std::vector<std::pair<const Descriptor*, std::vector<const FieldDescriptor*>>>
      frontier = {{type, {}}};
  for (size_t step = 0; step < kMaxSteps && found.size() < kMaxPaths; ++step) {
    std::vector<
        std::pair<const Descriptor*, std::vector<const FieldDescriptor*>>>
        next;
    for (const auto& [at, path] : frontier) {
      for (int i = 0; i < at->field_count(); ++i) {
        const FieldDescriptor* field = at->field(i);
        if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE ||
            field->is_map()) {
          continue;
        }
        std::vector<const FieldDescriptor*> longer = path;
        longer.push_back(field);
        if (field->message_type() == type) {
          if (found.size() < kMaxPaths) found.push_back(longer);
        } else if (next.size() < 4096) {
          next.emplace_back(field->message_type(), std::move(longer));
        }
      }
    }
    frontier = std::move(next);
  }
  if (found.empty()) return {};
  return found[rng() % found.size()];
}

// Nests `message` through one of its type's recursive paths: tuple shapes
// in tuple shapes, subgraphs in attributes in nodes. Around the 64-level
// scan limit and protobuf's 100, at most 1,000 messages deep (deeper would
// only overflow the stack of this mutator's own serializer).
void NestDeep(Message* message, size_t room, Rng& rng) {
  const std::vector<const FieldDescriptor*> path =
      RecursionPath(message->GetDescriptor(), rng);
  if (path.empty()) return;
  constexpr size_t kDepths[] = {8, 63, 64, 65, 100, 101, 1000};
  const size_t levels =
      std::min(kDepths[rng() % std::size(kDepths)] / path.size() + 1,
               room / (4 * path.size()));
  Message* at = message;
  for (size_t level = 0; level < levels; ++level) {
    for (const FieldDescriptor* field : path) {
      const Reflection* r = at->GetReflection();
      at = field->is_repeated() ? r->AddMessage(at, field)
                                : r->MutableMessage(at, field);
    }
  }
}

// Copies one string of the tree into another string field (a node's
// input made its own name, two nodes with one name, an empty name).
void CopyString(const std::vector<Message*>& messages, Rng& rng) {
  const auto is_string = [](const FieldDescriptor& field) {
    return field.cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  };
  Message* from = messages[rng() % messages.size()];
  Message* to = messages[rng() % messages.size()];
  const FieldDescriptor* source =
      PickField(from->GetDescriptor(), rng, is_string);
  const FieldDescriptor* target =
      PickField(to->GetDescriptor(), rng, is_string);
  if (source == nullptr || target == nullptr) return;
  const Reflection* r = from->GetReflection();
  std::string value;
  if (!source->is_repeated()) {
    value = r->GetString(*from, source);
  } else if (const int size = r->FieldSize(*from, source); size > 0) {
    value = r->GetRepeatedString(*from, source, rng() % size);
  }
  const Reflection* w = to->GetReflection();
  if (!target->is_repeated()) {
    w->SetString(to, target, std::move(value));
  } else if (const int size = w->FieldSize(*to, target); size > 0) {
    w->SetRepeatedString(to, target, rng() % size, std::move(value));
  } else {
    w->AddString(to, target, std::move(value));
  }
}

// One structure-aware hostile change anywhere in the tree under `root`;
// `room` is about how many bytes the change may add.
void MutateMessageTree(Message* root, size_t room, Rng& rng) {
  std::vector<Message*> messages;
  CollectMessages(root, &messages);
  Message* message = messages[rng() % messages.size()];
  const Descriptor* type = message->GetDescriptor();
  switch (rng() % 5) {
    case 0:
    case 1:
      if (const FieldDescriptor* field = PickField(type, rng, IsNumber)) {
        SetExtremeNumber(message, field, rng);
      }
      break;
    case 2:
      if (const FieldDescriptor* field =
              PickField(type, rng, [](const FieldDescriptor& field) {
                return field.is_repeated() && !field.is_map() &&
                       field.cpp_type() != FieldDescriptor::CPPTYPE_STRING;
              })) {
        GrowRepeated(message, field, room, rng);
      }
      break;
    case 3:
      NestDeep(message, room, rng);
      break;
    default:
      CopyString(messages, rng);
      break;
  }
}

// The message a binary graph format's file holds; null for text formats
// and unknown names. "" and "auto" take one at random (the importer sniffs).
const Descriptor* FormatMessage(std::string_view format, Rng& rng) {
  constexpr std::pair<std::string_view, const char*> kMessages[] = {
      {"hlo-proto", "xla.HloModuleProto"},
      {"onnx", "gopt.onnx.ModelProto"},
      {"graphdef", "gopt.tensorflow.GraphDef"},
      {"gopt", "gopt.v1.Graph"},
      {"tpugraphs", "tpu_graphs.ModuleTuningData"},
      {"tpugraphs", "tpu_graphs.TuningData"},
  };
  std::vector<const char*> names;
  for (const auto& [name, message] : kMessages) {
    if (format.empty() || format == "auto" || format == name) {
      names.push_back(message);
    }
  }
  if (names.empty()) return nullptr;
  return google::protobuf::DescriptorPool::generated_pool()
      ->FindMessageTypeByName(names[rng() % names.size()]);
}

// True for bytes that read as text (HLO, JSON, protobuf text format).
bool LooksLikeText(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, 256);
  return !head.empty() && std::all_of(head.begin(), head.end(), [](char c) {
    return c == '\n' || c == '\r' || c == '\t' ||
           (static_cast<unsigned char>(c) >= 0x20 &&
            static_cast<unsigned char>(c) < 0x7f);
  });
}

// Text-level hostile changes, for the text formats.
void MutateText(std::string* text, size_t room, Rng& rng) {
  if (text->empty()) return;
  const size_t at = rng() % text->size();
  switch (rng() % 4) {
    case 0: {
      // A number (a dimension, an index, a count) made extreme.
      const size_t start = text->find_first_of("0123456789", at);
      if (start == std::string::npos) return;
      const size_t end =
          std::min(text->size(), text->find_first_not_of("0123456789", start));
      text->replace(
          start, end - start,
          std::to_string(rng() % 2 ? InterestingInt(rng)
                                   : static_cast<int64_t>(rng() % 70) - 1));
      return;
    }
    case 1: {
      // Nesting past every limit: tuple shapes, blocks, arrays.
      constexpr std::string_view kOpeners[] = {"(", "{", "[",
                                               "{\"a\":", "(f32[], "};
      const std::string_view opener = kOpeners[rng() % std::size(kOpeners)];
      const size_t count = HostileCount(room / opener.size(), rng);
      std::string run;
      for (size_t i = 0; i < count; ++i) run.append(opener);
      text->insert(at, run);
      return;
    }
    case 2: {
      // A shape of huge rank: dimensions added after a '['.
      const size_t open = text->find('[', at);
      if (open == std::string::npos) return;
      const size_t count = HostileCount(room / 2, rng);
      std::string dims;
      for (size_t i = 0; i < count; ++i) dims.append("1,");
      text->insert(open + 1, dims);
      return;
    }
    default: {
      // One line repeated thousands of times (many nodes of one kind).
      const size_t begin = text->rfind('\n', at);
      const size_t line_start = begin == std::string::npos ? 0 : begin + 1;
      const size_t line_end = std::min(text->size(), text->find('\n', at));
      if (line_end <= line_start) return;
      const std::string line =
          text->substr(line_start, line_end - line_start) + "\n";
      const size_t count = HostileCount(room / line.size(), rng);
      std::string lines;
      for (size_t i = 0; i < count; ++i) lines.append(line);
      text->insert(line_start, lines);
      return;
    }
  }
}

// The structure-aware hostile change of a serialized graph of `format`.
void MutateSerializedGraph(std::string* bytes, std::string_view format,
                           size_t room, Rng& rng) {
  if (LooksLikeText(*bytes)) {
    MutateText(bytes, room, rng);
    return;
  }
  const Descriptor* type = FormatMessage(format, rng);
  if (type == nullptr) return;
  std::unique_ptr<Message> message(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(type)
          ->New());
  if (!message->ParseFromString(*bytes)) return;
  MutateMessageTree(message.get(), room, rng);
  message->SerializeToString(bytes);
}

// Bytes a mutation may add to `request` so that the fuzzer input (one byte
// and the request) still fits in `max_size`, with slack for length
// prefixes that grow.
size_t RoomLeft(const google::protobuf::MessageLite& request, size_t max_size) {
  constexpr size_t kPrefixSlack = 16;
  const size_t used = 1 + request.ByteSizeLong() + kPrefixSlack;
  return max_size > used ? max_size - used : 0;
}

// Mutates the graph in place, keeping the envelope valid: structure-aware
// (a node's costs, the hostile classes above) or byte-level. `room`: how
// many bytes the graph may grow by.
void MutateGraph(gopt::v1::GraphInput* graph, size_t room, Rng& rng) {
  if (graph->has_graph() && rng() % 2 == 0) {
    MutateMessageTree(graph->mutable_graph(), room, rng);
    return;
  }
  if (graph->has_graph()) {
    gopt::v1::Graph* native = graph->mutable_graph();
    if (native->nodes_size() == 0) return;
    gopt::v1::Node* node = native->mutable_nodes(rng() % native->nodes_size());
    switch (rng() % 5) {
      case 0:
        node->set_flops(InterestingDouble(rng));
        break;
      case 1:
        node->set_bytes_read(InterestingInt(rng));
        break;
      case 2:
        node->set_bytes_written(InterestingInt(rng));
        break;
      case 3:
        node->set_bytes_communicated(InterestingInt(rng));
        break;
      default:
        native->set_compute_costs(!native->compute_costs());
        break;
    }
    return;
  }
  if (rng() % 8 == 0) {
    constexpr const char* kFormats[] = {
        "",         "auto", "hlo",  "hlo-proto", "onnx",
        "graphdef", "tfjs", "gopt", "tpugraphs", "xyz"};
    graph->set_format(kFormats[rng() % std::size(kFormats)]);
    return;
  }
  std::string* bytes = graph->mutable_serialized();
  if (rng() % 8 == 1) {
    // The hostile classes of the second reliability review at fuzzer
    // scale: a run of empty node elements (under the node field number of
    // one format or another), or JSON opened deeper than any limit.
    constexpr std::string_view kRuns[] = {
        std::string_view("\x0a\x00", 2), std::string_view("\x12\x00", 2),
        std::string_view("\x1a\x00", 2), "[", "{},"};
    const std::string_view run = kRuns[rng() % std::size(kRuns)];
    const size_t count = HostileCount(room / run.size(), rng);
    std::string runs;
    for (size_t i = 0; i < count; ++i) runs.append(run);
    bytes->insert(bytes->empty() ? 0 : rng() % bytes->size(), runs);
    return;
  }
  if (rng() % 2 == 0) {
    MutateSerializedGraph(bytes, graph->format(), room, rng);
    return;
  }
  const size_t size = bytes->size();
  if (size == 0) return;
  bytes->resize(size + std::min<size_t>(room, 64));
  const size_t mutated = LLVMFuzzerMutate(
      reinterpret_cast<uint8_t*>(bytes->data()), size, bytes->size());
  bytes->resize(mutated);
}

void MutateOptions(gopt::v1::OptimizeOptions* options, Rng& rng) {
  switch (rng() % 5) {
    case 0:
      options->set_default_dim(InterestingInt(rng));
      break;
    case 1:
      (*options->mutable_symbolic_dims())[rng() % 2 ? "batch" : "N"] =
          InterestingInt(rng);
      break;
    case 2:
      options->set_seed(rng());
      break;
    default: {
      constexpr const char* kParts[] = {
          "single", "round-robin", "random",  "expert", "metis",
          "heft",   "m-etf",       "m-sct",   "fifo",   "critical-path",
          "none",   "greedy",      "default", "",       "bogus"};
      std::string method = kParts[rng() % std::size(kParts)];
      const int extra = static_cast<int>(rng() % 4);
      for (int i = 0; i < extra; ++i) {
        method += "+";
        method += kParts[rng() % std::size(kParts)];
      }
      options->add_baseline_methods(method);
      break;
    }
  }
}

void MutateOptimize(gopt::v1::OptimizeRequest* request, size_t max_size,
                    Rng& rng) {
  switch (rng() % 10) {
    case 0:
    case 1:
    case 2:
      MutateTopology(request->mutable_topology(), rng);
      break;
    case 3:
    case 4:
      MutateGraph(request->mutable_graph(), RoomLeft(*request, max_size), rng);
      break;
    case 5:
    case 6:
      MutateOptions(request->mutable_options(), rng);
      break;
    case 7: {
      gopt::v1::Budget* budget = request->mutable_budget();
      switch (rng() % 3) {
        case 0:
          budget->set_mode(static_cast<gopt::v1::Budget::Mode>(rng() % 5));
          break;
        case 1:
          budget->set_fine_tune_steps(InterestingInt32(rng));
          break;
        default:
          budget->set_seconds(InterestingDouble(rng));
          break;
      }
      break;
    }
    case 8: {
      gopt::v1::Tasks* tasks = request->mutable_tasks();
      tasks->set_placement(rng() % 2);
      tasks->set_scheduling(rng() % 2);
      tasks->set_fusion(rng() % 2);
      tasks->set_layout(rng() % 2);
      break;
    }
    default:
      request->set_allow_partial_result(!request->allow_partial_result());
      break;
  }
}

void MutatePlan(gopt::v1::Plan* plan, Rng& rng) {
  const int n = plan->device_size();
  switch (rng() % 6) {
    case 0:
      if (n > 0)
        plan->set_device(rng() % n,
                         rng() % 2 ? InterestingInt32(rng) : rng() % 8);
      break;
    case 1:
      if (plan->priority_size() > 0) {
        plan->set_priority(rng() % plan->priority_size(),
                           InterestingInt32(rng));
      }
      break;
    case 2:
      if (plan->fusion_group_size() > 0) {
        plan->set_fusion_group(rng() % plan->fusion_group_size(),
                               rng() % 2 ? InterestingInt32(rng) : rng() % 4);
      }
      break;
    case 3: {
      // Layouts for every node: a permutation-ish minor_to_major.
      plan->clear_layout();
      for (int i = 0; i < n; ++i) {
        gopt::v1::TensorLayout* layout = plan->add_layout();
        const int rank = static_cast<int>(rng() % 4);
        for (int d = 0; d < rank; ++d) {
          layout->add_minor_to_major(rng() % 8 == 0 ? InterestingInt32(rng)
                                                    : rank - 1 - d);
        }
      }
      break;
    }
    case 4:
      if (n > 0) {
        plan->mutable_device()->RemoveLast();
      } else {
        plan->add_device(0);
      }
      break;
    default:
      plan->clear_priority();
      plan->clear_fusion_group();
      break;
  }
}

void MutateEvaluate(gopt::v1::EvaluateRequest* request, size_t max_size,
                    Rng& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
      MutateTopology(request->mutable_topology(), rng);
      break;
    case 2:
      MutateGraph(request->mutable_graph(), RoomLeft(*request, max_size), rng);
      break;
    case 3:
    case 4:
    case 5:
      MutatePlan(request->mutable_plan(), rng);
      break;
    case 6:
      MutateOptions(request->mutable_options(), rng);
      break;
    default:
      request->set_include_trace(!request->include_trace());
      break;
  }
}

template <typename Request>
size_t MutateRequest(uint8_t* data, size_t size, size_t max_size, Rng& rng,
                     void (*mutate)(Request*, size_t, Rng&)) {
  Request request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  mutate(&request, max_size, rng);
  const std::string bytes = request.SerializeAsString();
  if (bytes.size() + 1 > max_size) return 0;
  std::memcpy(data + 1, bytes.data(), bytes.size());
  return bytes.size() + 1;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  Rng rng(seed);
  if (size > 1 && rng() % 2 == 0) {
    const size_t mutated = (data[0] & 1) != 0
                               ? MutateRequest<gopt::v1::EvaluateRequest>(
                                     data, size, max_size, rng, MutateEvaluate)
                               : MutateRequest<gopt::v1::OptimizeRequest>(
                                     data, size, max_size, rng, MutateOptimize);
    if (mutated > 0) return mutated;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
