#ifndef GOPT_TESTS_UTIL_HOSTILE_INPUTS_H_
#define GOPT_TESTS_UTIL_HOSTILE_INPUTS_H_

#include <cstddef>
#include <string>

namespace gopt::testing {

// The wire encoding of a length-delimited protobuf field.
std::string LengthDelimited(int field, const std::string& payload);

// A file of about `target_bytes` in the wire layout of `format` ("onnx",
// "graphdef", "hlo-proto", "gopt", anything else: "tpugraphs") whose nodes
// are all empty: the class of input that once parsed at ~200x its size.
std::string EmptyNodesFile(const std::string& format, size_t target_bytes);

// JSON of about `target_bytes` for `format` ("tfjs", anything else: a
// gopt.v1.Graph) that opens its node array and then, when `deep`, only
// '[' to the end; otherwise fills it with empty objects.
std::string HostileJson(const std::string& format, size_t target_bytes,
                        bool deep);

}  // namespace gopt::testing

#endif  // GOPT_TESTS_UTIL_HOSTILE_INPUTS_H_
