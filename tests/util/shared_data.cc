#include "tests/util/shared_data.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gopt::testing {
namespace {

std::string SharedDataRoot() {
  if (const char* env = std::getenv("GOPT_SHARED_DATA"); env && *env) {
    return env;
  }
  return GOPT_SHARED_DATA_DEFAULT_PATH;
}

}  // namespace

std::string SharedDataPath(const std::string& relative_path) {
  const std::string path = SharedDataRoot() + "/" + relative_path;
  std::ifstream file(path);
  if (!file) {
    ADD_FAILURE()
        << "shared test data missing: " << path
        << " (set GOPT_SHARED_DATA to the folder holding hlo/, onnx/, "
           "tf_graphdef/, tfjs/ and tpugraphs/; CI puts it at "
           "../shared/data beside the checkout)";
  }
  return path;
}

std::map<std::string, int64_t> SharedDataDims(
    const std::string& relative_path) {
  if (relative_path == "onnx/silero_vad_legacy.onnx") {
    return {{"sequence", 512}};
  }
  if (relative_path == "onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx") {
    return {{"p2o.DynamicDimension.1", 48}, {"p2o.DynamicDimension.2", 192}};
  }
  return {};
}

std::string ReadSharedData(const std::string& relative_path) {
  const std::string path = SharedDataPath(relative_path);
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace gopt::testing
