#include "graph/importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

TEST(ReadFileToStringTest, ReadsBytesAndNamesBadPaths) {
  const std::string path = ::testing::TempDir() + "/read_file_test.bin";
  {
    std::ofstream file(path, std::ios::binary);
    file << std::string("a\0b", 3);
  }
  EXPECT_EQ(ReadFileToString(path).value(), std::string("a\0b", 3));

  auto missing = ReadFileToString("/nonexistent/graph.onnx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("/nonexistent/graph.onnx"));

  auto directory = ReadFileToString(::testing::TempDir());
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(directory.status().message()),
              HasSubstr("is a directory"));
}

}  // namespace
}  // namespace gopt::graph
