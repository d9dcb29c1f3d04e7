#include "util/repeated_flags.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::util {
namespace {

using ::testing::HasSubstr;

absl::Status Check(std::vector<const char*> args) {
  args.insert(args.begin(), "program");
  return RefuseRepeatedFlags(static_cast<int>(args.size()), args.data());
}

TEST(RefuseRepeatedFlagsTest, DistinctFlagsAndOperandsPass) {
  EXPECT_TRUE(Check({"--workers=a,b", "--listen", "x:1", "file.onnx"}).ok());
  EXPECT_TRUE(Check({}).ok());
}

TEST(RefuseRepeatedFlagsTest, RepeatedFlagInAnyFormIsRefusedByName) {
  const absl::Status status = Check({"--workers=a", "-workers", "b"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--workers is given twice"));
  EXPECT_THAT(status.message(), HasSubstr("--workers=a,b"));
  EXPECT_FALSE(Check({"--reflection", "--noreflection"}).ok());
}

TEST(RefuseRepeatedFlagsTest, ArgumentsAfterDoubleDashAreOperands) {
  EXPECT_TRUE(Check({"--dim=a=1", "--", "--dim=b=2"}).ok());
}

}  // namespace
}  // namespace gopt::util
