#include "policy/sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace gopt::policy {
namespace {

// Known answers from FIPS 180-4's examples and NIST's test vectors.
TEST(Sha256Test, EmptyString) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, Abc) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, TwoBlockMessage) {
  EXPECT_EQ(
      Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, OneMillionAs) {
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundaries (55 bytes still fit the length in
// the last block, 56 do not), checked against Python's hashlib.
TEST(Sha256Test, PaddingBoundaries) {
  EXPECT_EQ(Sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(Sha256Hex(std::string(63, 'a')),
            "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  EXPECT_EQ(Sha256Hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(Sha256Hex(std::string(65, 'a')),
            "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0");
  EXPECT_EQ(Sha256Hex(std::string(119, 'a')),
            "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  EXPECT_EQ(Sha256Hex(std::string(120, 'a')),
            "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");
}

TEST(Sha256Test, UnevenUpdatesEqualOneUpdate) {
  std::string message;
  for (int i = 0; i < 300; ++i) {
    for (int byte = 0; byte < 256; ++byte) message.push_back(static_cast<char>(byte));
  }
  Sha256 hash;
  size_t offset = 0;
  for (size_t chunk = 1; offset < message.size(); chunk = chunk * 3 % 997) {
    const size_t take = std::min(chunk, message.size() - offset);
    hash.Update(absl::string_view(message).substr(offset, take));
    offset += take;
  }
  EXPECT_EQ(Sha256::Hex(hash.Finish()),
            "f8b0585eb91f58c007a5634362c9f90d8543822c113f702523bc7b73408a9392");
  EXPECT_EQ(Sha256Hex(message),
            "f8b0585eb91f58c007a5634362c9f90d8543822c113f702523bc7b73408a9392");
}

TEST(Sha256Test, FileHashEqualsStringHash) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "sha256_test_file.bin")
          .string();
  const std::string contents(200000, 'z');
  std::ofstream(path, std::ios::binary) << contents;
  absl::StatusOr<std::string> hash = Sha256HexOfFile(path);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*hash, Sha256Hex(contents));
}

TEST(Sha256Test, MissingFileIsNotFound) {
  EXPECT_EQ(Sha256HexOfFile(::testing::TempDir() + "/no_such_file.bin")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gopt::policy
