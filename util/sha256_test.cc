#include "util/sha256.h"

#include <string>

#include "gtest/gtest.h"

namespace gopt {
namespace {

TEST(Sha256Test, KnownAnswers) {
  // FIPS 180-2 appendix B.1 and the empty message.
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, StreamedEqualsOneShot) {
  Sha256 hash;
  hash.Update("a");
  hash.Update("bc");
  EXPECT_EQ(hash.HexDigest(), Sha256Hex("abc"));
}

// Fields, small strings and strings longer than the hasher's buffer, in an
// order that crosses its block boundaries at every offset, digest as the
// same bytes hashed at once.
TEST(Sha256Test, BufferedUpdatesEqualOneShot) {
  Sha256 hash;
  std::string bytes;
  for (int i = 0; i < 3000; ++i) {
    // Unsigned, so that the multiplication wraps instead of overflowing.
    const int64_t value = static_cast<int64_t>(
        uint64_t{static_cast<uint32_t>(i)} * uint64_t{0x0101010101010101} - 7);
    hash.UpdateInt64(value);
    for (int b = 0; b < 8; ++b) {
      bytes.push_back(
          static_cast<char>(static_cast<uint64_t>(value) >> (8 * b)));
    }
    const std::string text(static_cast<size_t>(i % 13 == 0 ? 5000 + i : i % 11),
                           static_cast<char>('a' + i % 26));
    hash.Update(text);
    bytes += text;
  }
  EXPECT_EQ(hash.HexDigest(), Sha256Hex(bytes));
}

TEST(Sha256Test, LengthPrefixSeparatesFields) {
  Sha256 ab_c;
  ab_c.UpdateString("ab");
  ab_c.UpdateString("c");
  Sha256 a_bc;
  a_bc.UpdateString("a");
  a_bc.UpdateString("bc");
  EXPECT_NE(ab_c.HexDigest(), a_bc.HexDigest());
}

TEST(Sha256Test, NegativeZeroHashesAsZero) {
  Sha256 zero;
  zero.UpdateDouble(0.0);
  Sha256 negative_zero;
  negative_zero.UpdateDouble(-0.0);
  EXPECT_EQ(zero.HexDigest(), negative_zero.HexDigest());
}

}  // namespace
}  // namespace gopt
