// Every real graph in ../shared/data, and damaged copies of each, through
// the full importer registry: real files import under --format=auto; empty,
// truncated and bit-flipped files give an error Status (or, where the damage
// happens to leave a valid file, a graph) and never crash or hang.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/import/builtin_importers.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

using ::testing::HasSubstr;

struct RealFile {
  const char* path;
  const char* format;
  // Symbolic dimensions the file needs (its defaults of 1 are too small to
  // be a valid input: a 1-sample audio window, a 1-pixel image).
  std::vector<std::pair<std::string, int64_t>> symbolic_dims = {};
};

const RealFile kRealFiles[] = {
    {"hlo/mixer_b16_jax_unopt.hlo", "hlo"},
    {"hlo/efficientnet_jax_lambda256.hlo", "hlo"},
    {"hlo/nux_flow_jit_loss9581.hlo", "hlo"},
    {"hlo/llama2_ptxla_neuron_train_tp1.hlo", "hlo"},
    {"hlo/jaxmd_apply_fn.hlo", "hlo"},
    {"hlo/jaxrl_td_target.hlo", "hlo"},
    {"hlo/maml_flax_train_step.hlo", "hlo"},
    {"onnx/light_resnet50.onnx", "onnx"},
    {"onnx/light_shufflenet.onnx", "onnx"},
    {"onnx/light_squeezenet.onnx", "onnx"},
    {"onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     "onnx",
     {{"p2o.DynamicDimension.1", 48}, {"p2o.DynamicDimension.2", 192}}},
    {"onnx/silero_vad_legacy.onnx", "onnx", {{"sequence", 512}}},
    {"tf_graphdef/kws_LSTM_S.pb", "graphdef"},
    {"tf_graphdef/kws_DS_CNN_S.pb", "graphdef"},
    {"tfjs/handtrack.json", "tfjs"},
    {"tfjs/movenet-multipose.json", "tfjs"},
    {"tpugraphs/module_tuning_data_layout.pb", "tpugraphs"},
    {"tpugraphs/op_tuning_data.pb", "tpugraphs"},
};

void PrintTo(const RealFile& file, std::ostream* os) { *os << file.path; }

class ImportRobustnessTest : public ::testing::TestWithParam<RealFile> {
 protected:
  ImportRobustnessTest() { graph::RegisterBuiltinImporters(&registry_); }

  graph::ImportOptions Options() const {
    graph::ImportOptions options;
    options.source_name = GetParam().path;
    for (const auto& [name, value] : GetParam().symbolic_dims) {
      options.symbolic_dims[name] = value;
    }
    return options;
  }

  graph::ImporterRegistry registry_;
};

TEST_P(ImportRobustnessTest, RealFileImportsWithSniffedFormat) {
  const std::string contents = testing::ReadSharedData(GetParam().path);
  ASSERT_FALSE(contents.empty());
  auto detected = registry_.Detect(contents);
  ASSERT_TRUE(detected.ok()) << detected.status();
  EXPECT_EQ((*detected)->format(), GetParam().format);
  auto graph = registry_.Import(contents, "auto", Options());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_GT(graph->num_nodes(), 0);
  EXPECT_GT(graph->total_bytes(), 0);
}

TEST_P(ImportRobustnessTest, TruncatedCopiesFailCleanly) {
  const std::string contents = testing::ReadSharedData(GetParam().path);
  ASSERT_FALSE(contents.empty());
  const graph::ImportOptions options = Options();
  for (int tenth = 0; tenth < 10; ++tenth) {
    const size_t length = contents.size() * tenth / 10 + tenth;
    auto graph = registry_.Import(contents.substr(0, length), GetParam().format,
                                  options);
    if (!graph.ok()) {
      // The message names the file.
      EXPECT_THAT(std::string(graph.status().message()),
                  HasSubstr(GetParam().path));
    }
  }
}

TEST_P(ImportRobustnessTest, BitFlippedCopiesFailCleanly) {
  const std::string contents = testing::ReadSharedData(GetParam().path);
  ASSERT_FALSE(contents.empty());
  std::mt19937_64 rng(/*seed=*/20261122);
  const graph::ImportOptions options = Options();
  for (int trial = 0; trial < 24; ++trial) {
    std::string damaged = contents;
    for (int flip = 0; flip < 1 + trial % 4; ++flip) {
      const size_t position = rng() % damaged.size();
      damaged[position] =
          static_cast<char>(damaged[position] ^ (1 << (rng() % 8)));
    }
    auto graph = registry_.Import(damaged, GetParam().format, options);
    if (!graph.ok()) {
      EXPECT_FALSE(graph.status().message().empty());
    }
  }
}

TEST_P(ImportRobustnessTest, WrongFormatFlagIsAnError) {
  const std::string contents = testing::ReadSharedData(GetParam().path);
  ASSERT_FALSE(contents.empty());
  const std::string wrong =
      std::string(GetParam().format) == "hlo" ? "onnx" : "hlo";
  auto graph = registry_.Import(contents, wrong, graph::ImportOptions());
  EXPECT_FALSE(graph.ok());
}

INSTANTIATE_TEST_SUITE_P(SharedData, ImportRobustnessTest,
                         ::testing::ValuesIn(kRealFiles),
                         [](const ::testing::TestParamInfo<RealFile>& info) {
                           std::string name = info.param.path;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

TEST(ImportRobustnessTest, EmptyFileIsAnErrorForEveryFormat) {
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  auto sniffed = registry.Import("", "auto", graph::ImportOptions());
  ASSERT_FALSE(sniffed.ok());
  EXPECT_THAT(std::string(sniffed.status().message()), HasSubstr("empty"));
  for (const std::string& format : registry.formats()) {
    EXPECT_FALSE(registry.Import("", format, graph::ImportOptions()).ok())
        << format;
  }
}

TEST(ImportRobustnessTest, UnknownFormatNameListsTheKnownOnes) {
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  auto graph = registry.Import("HloModule m", "caffe", graph::ImportOptions());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("onnx"));
}

}  // namespace
}  // namespace gopt
