#include "engine/plan_key.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
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
// plans are allowed.
void HashAllowedOptions(const gopt::v1::OptimizeRequest& request,
                        Sha256* hash) {
  hash->UpdateInt64(request.options().baseline_methods_size());
  for (const std::string& method : request.options().baseline_methods()) {
    hash->UpdateString(method);
  }
  hash->UpdateString(request.policy().name());
}

}  // namespace

std::string ExactRequestKey(const gopt::v1::OptimizeRequest& request) {
  Sha256 hash;
  const gopt::v1::GraphInput& graph = request.graph();
  hash.UpdateInt64(graph.source_case());
  if (graph.has_graph()) {
    hash.UpdateString(DeterministicBytes(graph.graph()));
  } else {
    hash.UpdateString(graph.serialized());
  }
  hash.UpdateString(graph.format());
  hash.UpdateString(graph.name());
  gopt::v1::OptimizeOptions import_options;
  *import_options.mutable_symbolic_dims() = request.options().symbolic_dims();
  import_options.set_default_dim(request.options().default_dim());
  hash.UpdateString(DeterministicBytes(import_options));
  hash.UpdateString(DeterministicBytes(request.topology()));
  hash.UpdateString(DeterministicBytes(request.tasks()));
  HashAllowedOptions(request, &hash);
  return "x1-" + hash.HexDigest();
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
  hash.UpdateString(DeterministicBytes(tasks));
  HashAllowedOptions(request, &hash);
  return "k1-" + hash.HexDigest();
}

}  // namespace gopt::engine
