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

std::string ReadSharedData(const std::string& relative_path) {
  const std::string path = SharedDataPath(relative_path);
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace gopt::testing
