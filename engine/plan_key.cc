#include "engine/plan_key.h"

#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "simulator/learned_cost_model.h"
#include "simulator/topology_proto.h"
#include "util/sha256.h"

namespace gopt::engine {
namespace {

// Deterministic bytes of `message` (map entries sorted), so equal messages
// give equal keys in every process.
std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    // Flushed into `bytes` when the streams go.
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// The parts of the request besides graph and topology that change which
// plans are allowed, given to `sink` (a Sha256 or a RestSink).
template <typename Sink>
void AddAllowedOptions(const gopt::v1::OptimizeRequest& request, Sink* sink) {
  sink->UpdateInt64(request.options().baseline_methods_size());
  for (const std::string& method : request.options().baseline_methods()) {
    sink->UpdateString(method);
  }
  sink->UpdateString(request.policy().name());
}

// What the exact key covers after the graph's source and bytes, in order.
template <typename Sink>
void AddExactKeyRest(const gopt::v1::OptimizeRequest& request, Sink* sink) {
  sink->UpdateString(request.graph().format());
  sink->UpdateString(request.graph().name());
  gopt::v1::OptimizeOptions import_options;
  *import_options.mutable_symbolic_dims() = request.options().symbolic_dims();
  import_options.set_default_dim(request.options().default_dim());
  sink->UpdateString(DeterministicBytes(import_options));
  sink->UpdateString(DeterministicBytes(request.topology()));
  sink->UpdateString(DeterministicBytes(request.tasks()));
  AddAllowedOptions(request, sink);
}

// The exact key's parts besides the graph bytes, encoded unambiguously
// (each string after its length).
class RestSink {
 public:
  void UpdateInt64(int64_t value) { absl::StrAppend(&bytes_, value, ";"); }
  void UpdateString(absl::string_view bytes) {
    absl::StrAppend(&bytes_, bytes.size(), ":", bytes);
  }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

}  // namespace

std::string ExactRequestKey(const gopt::v1::OptimizeRequest& request) {
  const ExactRequestIdentity identity(request);
  Sha256 hash;
  hash.UpdateInt64(request.graph().source_case());
  hash.UpdateString(identity.graph_bytes());
  AddExactKeyRest(request, &hash);
  return "x1-" + hash.HexDigest();
}

ExactRequestIdentity::ExactRequestIdentity(
    const gopt::v1::OptimizeRequest& request) {
  const gopt::v1::GraphInput& graph = request.graph();
  if (graph.has_graph()) {
    inline_graph_ = DeterministicBytes(graph.graph());
    graph_bytes_ = inline_graph_;
  } else {
    graph_bytes_ = graph.serialized();
  }
  RestSink rest;
  rest.UpdateInt64(graph.source_case());
  AddExactKeyRest(request, &rest);
  rest_ = rest.Take();
}

ExactRequestIdentity::ExactRequestIdentity(const ExactRequestIdentity& other)
    : inline_graph_(other.inline_graph_),
      graph_bytes_(other.graph_bytes_),
      rest_(other.rest_) {
  // A view into the other's own copy would dangle with it.
  if (other.owns_graph_bytes()) graph_bytes_ = inline_graph_;
}

ExactRequestIdentity ExactRequestIdentity::Owned() const {
  ExactRequestIdentity owned(*this);
  if (!owns_graph_bytes()) {
    owned.inline_graph_ = std::string(graph_bytes_);
    owned.graph_bytes_ = owned.inline_graph_;
  }
  return owned;
}

bool ExactRequestIdentity::owns_graph_bytes() const {
  return graph_bytes_.data() == inline_graph_.data();
}

size_t ExactRequestIdentity::Hash() const {
  return absl::HashOf(rest_, graph_bytes_);
}

bool ExactRequestIdentity::operator==(const ExactRequestIdentity& other) const {
  return rest_ == other.rest_ && graph_bytes_ == other.graph_bytes_;
}

std::string PlanKey(absl::string_view fingerprint,
                    const simulator::Topology& topology,
                    const gopt::v1::Tasks& tasks,
                    const gopt::v1::OptimizeRequest& request) {
  Sha256 hash;
  hash.UpdateString(fingerprint);
  gopt::v1::Topology numbers = simulator::TopologyToProto(topology);
  numbers.clear_name();
  numbers.clear_source();
  hash.UpdateString(DeterministicBytes(numbers));
  // A learned runtime model prices the plans: its weights are part of the
  // machine (the path alone could name a retrained model).
  if (!topology.devices.empty() &&
      topology.devices.front().runtime_model != nullptr) {
    hash.UpdateString(topology.devices.front().runtime_model->fingerprint());
  }
  hash.UpdateString(DeterministicBytes(tasks));
  AddAllowedOptions(request, &hash);
  return "k1-" + hash.HexDigest();
}

}  // namespace gopt::engine
