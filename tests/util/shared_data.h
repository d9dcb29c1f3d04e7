#ifndef GOPT_TESTS_UTIL_SHARED_DATA_H_
#define GOPT_TESTS_UTIL_SHARED_DATA_H_

#include <cstdint>
#include <map>
#include <string>

namespace gopt::testing {

// Absolute path of a file under the shared real-graph folder, e.g.
// SharedDataPath("hlo/mixer_b16_jax_unopt.hlo"). The folder is
// $GOPT_SHARED_DATA when set, else the build's default (../shared/data
// beside the checkout). When the file is missing the calling test fails
// with a message saying where it looked and how to point it elsewhere; it
// never skips silently. Returns the path either way.
std::string SharedDataPath(const std::string& relative_path);

// Reads SharedDataPath(relative_path) fully; fails the test (and returns "")
// when it cannot.
std::string ReadSharedData(const std::string& relative_path);

// The symbolic dimensions a file of the shared folder needs to import (its
// defaults of 1 make windows that do not fit), e.g. {"sequence", 512} for
// onnx/silero_vad_legacy.onnx; empty for every other file.
std::map<std::string, int64_t> SharedDataDims(const std::string& relative_path);

}  // namespace gopt::testing

#endif  // GOPT_TESTS_UTIL_SHARED_DATA_H_
