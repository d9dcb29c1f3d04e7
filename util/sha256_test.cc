#include "util/sha256.h"

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
