#include "graph/importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>

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

// An importer whose estimate is fixed and whose imports are counted (and
// fail: no graph is needed to see whether the parse ran).
class CountingImporter final : public Importer {
 public:
  explicit CountingImporter(int* imports) : imports_(imports) {}
  absl::string_view format() const override { return "counting"; }
  bool Sniff(absl::string_view) const override { return true; }
  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents, const ParseCostLimits&) const override {
    ParseCost cost;
    cost.nodes = static_cast<int64_t>(contents.size());
    cost.bytes = 1000;
    return cost;
  }
  absl::StatusOr<Graph> Import(absl::string_view,
                               const ImportOptions&) const override {
    ++*imports_;
    return absl::InvalidArgumentError("parsed");
  }

 private:
  int* const imports_;
};

TEST(ImporterRegistryTest, AdmitSeesTheEstimateAndARefusalStopsTheParse) {
  int imports = 0;
  ImporterRegistry registry;
  registry.Register(std::make_unique<CountingImporter>(&imports));
  ParseCost seen;
  const absl::Status refused =
      registry
          .Import("abc", "counting", ImportOptions(),
                  [&](const ParseCost& cost) {
                    seen = cost;
                    return absl::ResourceExhaustedError("over budget");
                  })
          .status();
  EXPECT_EQ(refused, absl::ResourceExhaustedError("over budget"));
  EXPECT_EQ(seen.nodes, 3);
  EXPECT_EQ(seen.bytes, 1000);
  EXPECT_EQ(imports, 0);

  const absl::Status parsed =
      registry
          .Import("abc", "counting", ImportOptions(),
                  [](const ParseCost&) { return absl::OkStatus(); })
          .status();
  EXPECT_THAT(std::string(parsed.message()), HasSubstr("parsed"));
  EXPECT_EQ(imports, 1);
}

}  // namespace
}  // namespace gopt::graph
