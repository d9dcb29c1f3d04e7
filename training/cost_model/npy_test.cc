#include "training/cost_model/npy.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <string>
#include <vector>

#include "training/cost_model/dataset.h"

namespace gopt::policy::cost_model {
namespace {

// A .npy file per the NumPy format specification: magic, version, header
// length (2 bytes little-endian in 1.0, 4 in 2.0), the header dict padded
// with spaces and a newline to a multiple of 64 bytes, then the data.
std::string NpyFile(const std::string& descr, const std::string& shape,
                    const std::string& data, int major = 1) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(major);
  file += '\0';
  const uint32_t length = static_cast<uint32_t>(header.size());
  file += static_cast<char>(length & 0xff);
  file += static_cast<char>((length >> 8) & 0xff);
  if (major != 1) {
    file += static_cast<char>((length >> 16) & 0xff);
    file += static_cast<char>((length >> 24) & 0xff);
  }
  return file + header + data;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(NpyTest, ParsesFloat32Matrix) {
  const std::string file =
      NpyFile("<f4", "(2, 3)", Bytes<float>({1, 2, 3, 4, 5, -1.5f}));
  absl::StatusOr<NpyArray> array = ParseNpy(file);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array->floats, (std::vector<float>{1, 2, 3, 4, 5, -1.5f}));
  EXPECT_TRUE(array->ints.empty());
}

TEST(NpyTest, ParsesVersion2Int64AndBigEndianInt32) {
  absl::StatusOr<NpyArray> wide =
      ParseNpy(NpyFile("<i8", "(3,)", Bytes<int64_t>({-7, 0, 1LL << 40}), 2));
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->ints, (std::vector<int64_t>{-7, 0, 1LL << 40}));
  const std::string big_endian = {0, 0, 1, 2, '\xff', '\xff', '\xff', '\xfe'};
  absl::StatusOr<NpyArray> big = ParseNpy(NpyFile(">i4", "(2,)", big_endian));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->ints, (std::vector<int64_t>{258, -2}));
}

TEST(NpyTest, ParsesScalarAndBool) {
  absl::StatusOr<NpyArray> scalar =
      ParseNpy(NpyFile("<f8", "()", Bytes<double>({2.5})));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->floats, std::vector<float>{2.5f});
  absl::StatusOr<NpyArray> flags = ParseNpy(NpyFile("|b1", "(2,)", {1, 0}));
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->ints, (std::vector<int64_t>{1, 0}));
}

TEST(NpyTest, RejectsCorruptFilesWithClearErrors) {
  const std::string good = NpyFile("<f4", "(2,)", Bytes<float>({1, 2}));
  struct Case {
    std::string bytes;
    std::string message;
  };
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  std::string bad_version = good;
  bad_version[6] = 9;
  const std::vector<Case> cases = {
      {bad_magic, "does not start with"},
      {bad_version, "unsupported .npy format version 9"},
      {good.substr(0, good.size() - 1), "needs 8"},
      {good + "xx", "needs 8"},
      {good.substr(0, 40), "header says"},
      {NpyFile("<c8", "(1,)", std::string(8, '\0')), "unsupported dtype '<c8'"},
      {NpyFile("<f4", "(2,", Bytes<float>({1, 2})), "not a tuple"},
      {NpyFile("<f4", "(2, -1)", ""), "not a count"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<NpyArray> array = ParseNpy(c.bytes);
    ASSERT_FALSE(array.ok()) << c.message;
    EXPECT_EQ(array.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(array.status().message().find(c.message), std::string::npos)
        << array.status().message();
  }
  std::string fortran = NpyFile("<f4", "(2,)", Bytes<float>({1, 2}));
  fortran.replace(fortran.find("False"), 5, "True ");
  absl::StatusOr<NpyArray> array = ParseNpy(fortran);
  ASSERT_FALSE(array.ok());
  EXPECT_NE(array.status().message().find("fortran_order True"),
            std::string::npos);
}

// A zip archive holding `members` (stored, not compressed), built with
// libzip in memory.
std::string Zip(
    const std::vector<std::pair<std::string, std::string>>& members) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(buffer);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  for (const auto& [name, content] : members) {
    zip_source_t* source =
        zip_source_buffer(archive, content.data(), content.size(), 0);
    const zip_int64_t index =
        zip_file_add(archive, name.c_str(), source, ZIP_FL_OVERWRITE);
    zip_set_file_compression(archive, index, ZIP_CM_DEFLATE, 0);
  }
  zip_close(archive);
  zip_source_open(buffer);
  zip_source_seek(buffer, 0, SEEK_END);
  const zip_int64_t size = zip_source_tell(buffer);
  zip_source_seek(buffer, 0, SEEK_SET);
  std::string bytes(size, '\0');
  zip_source_read(buffer, bytes.data(), size);
  zip_source_close(buffer);
  zip_source_free(buffer);
  zip_error_fini(&error);
  return bytes;
}

// A 3-node tile sample: node 2 consumes nodes 0 and 1.
std::vector<std::pair<std::string, std::string>> TileSample() {
  std::vector<float> features(3 * 140, 0.0f);
  features[140 + 21] = 8;
  return {
      {"node_feat.npy", NpyFile("<f4", "(3, 140)", Bytes(features))},
      {"node_opcode.npy", NpyFile("<u1", "(3,)", {63, 63, 34})},
      {"edge_index.npy",
       NpyFile("<i8", "(2, 2)", Bytes<int64_t>({2, 0, 2, 1}))},
      {"config_feat.npy",
       NpyFile("<f4", "(2, 24)", Bytes(std::vector<float>(48, 1.0f)))},
      {"config_runtime.npy",
       NpyFile("<i8", "(2,)", Bytes<int64_t>({300, 200}))},
      {"config_runtime_normalizers.npy",
       NpyFile("<i8", "(2,)", Bytes<int64_t>({100, 100}))},
  };
}

TEST(NpzTest, ReadsATileSample) {
  absl::StatusOr<ConfigGroup> group =
      ConfigGroupFromNpz(Zip(TileSample()), Task::kTile, "toy.npz");
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(group->graph.num_nodes, 3);
  EXPECT_EQ(group->graph.opcodes, (std::vector<int32_t>{63, 63, 34}));
  // [u, v] = u consumes v: data flows v -> u.
  EXPECT_EQ(group->graph.edge_src, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(group->graph.edge_dst, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(group->graph.node_features[140 + 21], 8);
  EXPECT_EQ(group->runtimes, (std::vector<double>{3, 2}));
  EXPECT_EQ(group->num_configs, 2);
}

TEST(NpzTest, ReadsALayoutSample) {
  std::vector<std::pair<std::string, std::string>> members = TileSample();
  members.resize(3);
  std::vector<float> config(2 * 1 * 18, -1.0f);
  config[18] = 1;
  config[19] = 0;
  members.push_back(
      {"node_config_ids.npy", NpyFile("<i8", "(1,)", Bytes<int64_t>({2}))});
  members.push_back(
      {"node_config_feat.npy", NpyFile("<f4", "(2, 1, 18)", Bytes(config))});
  members.push_back(
      {"config_runtime.npy", NpyFile("<f8", "(2,)", Bytes<double>({5, 4}))});
  absl::StatusOr<ConfigGroup> group =
      ConfigGroupFromNpz(Zip(members), Task::kLayout, "layout.npz");
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(group->graph.configurable_nodes, std::vector<int32_t>{2});
  EXPECT_EQ(group->config_features, config);
}

TEST(NpzTest, MissingOrMisshapenArraysAreNamed) {
  std::vector<std::pair<std::string, std::string>> members = TileSample();
  members.erase(members.begin() + 3);  // config_feat
  absl::StatusOr<ConfigGroup> missing =
      ConfigGroupFromNpz(Zip(members), Task::kTile, "toy.npz");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no array 'config_feat'"),
            std::string::npos)
      << missing.status().message();

  members = TileSample();
  members[0].second = NpyFile("<f4", "(3, 2)", Bytes(std::vector<float>(6)));
  absl::StatusOr<ConfigGroup> misshapen =
      ConfigGroupFromNpz(Zip(members), Task::kTile, "toy.npz");
  ASSERT_FALSE(misshapen.ok());
  EXPECT_NE(misshapen.status().message().find("'node_feat'"), std::string::npos)
      << misshapen.status().message();

  members = TileSample();
  members[1].second = "\x93NUMPY garbage";
  absl::StatusOr<ConfigGroup> corrupt =
      ConfigGroupFromNpz(Zip(members), Task::kTile, "toy.npz");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("member 'node_opcode.npy'"),
            std::string::npos)
      << corrupt.status().message();

  absl::StatusOr<std::map<std::string, NpyArray>> not_zip =
      ParseNpz("this is not a zip archive");
  ASSERT_FALSE(not_zip.ok());
  EXPECT_NE(not_zip.status().message().find("not a .npz"), std::string::npos);
}

}  // namespace
}  // namespace gopt::policy::cost_model
