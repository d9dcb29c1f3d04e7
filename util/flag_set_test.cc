#include "util/flag_set.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gopt::util {
namespace {

struct Options {
  std::string name = "default";
  bool verbose = false;
  int32_t count = 3;
  double seconds = 1.5;
  std::vector<std::string> items;
};

FlagSet<Options> TestFlags() {
  FlagSet<Options> flags;
  flags.Add(
      "name", "a name", [](Options & o) -> auto& { return o.name; });
  flags.Add(
      "verbose", "talk", [](Options & o) -> auto& { return o.verbose; });
  flags.Add(
      "count", "how many", [](Options & o) -> auto& { return o.count; });
  flags.Add(
      "budget_seconds", "time", [](Options & o) -> auto& { return o.seconds; });
  flags.Add(
      "items", "a list", [](Options & o) -> auto& { return o.items; });
  return flags;
}

TEST(FlagSetTest, ParsesEverySpellingAndKeepsOperands) {
  Options options;
  std::vector<std::string> operands;
  ASSERT_TRUE(TestFlags()
                  .Parse({"a.hlo", "--name=x", "--verbose", "--count", "7",
                          "--budget-seconds=2.5", "b.hlo"},
                         &options, &operands)
                  .ok());
  EXPECT_EQ(options.name, "x");
  EXPECT_TRUE(options.verbose);
  EXPECT_EQ(options.count, 7);
  EXPECT_DOUBLE_EQ(options.seconds, 2.5);
  EXPECT_EQ(operands, (std::vector<std::string>{"a.hlo", "b.hlo"}));
}

TEST(FlagSetTest, RepeatedListFlagsAddUp) {
  Options options;
  std::vector<std::string> operands;
  ASSERT_TRUE(TestFlags()
                  .Parse({"--items=a,b", "--items", "c", "--items=d"}, &options,
                         &operands)
                  .ok());
  EXPECT_EQ(options.items, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(FlagSetTest, AListFlagReplacesItsDefaultThenAddsUp) {
  Options options;
  options.items = {"default"};
  std::vector<std::string> operands;
  ASSERT_TRUE(
      TestFlags().Parse({"--items=a", "--items=b"}, &options, &operands).ok());
  EXPECT_EQ(options.items, (std::vector<std::string>{"a", "b"}));
}

TEST(FlagSetTest, NoPrefixClearsABool) {
  Options options;
  options.verbose = true;
  std::vector<std::string> operands;
  ASSERT_TRUE(TestFlags().Parse({"--noverbose"}, &options, &operands).ok());
  EXPECT_FALSE(options.verbose);
}

TEST(FlagSetTest, DoubleDashEndsFlags) {
  Options options;
  std::vector<std::string> operands;
  ASSERT_TRUE(TestFlags().Parse({"--", "--name=x"}, &options, &operands).ok());
  EXPECT_EQ(options.name, "default");
  EXPECT_EQ(operands, (std::vector<std::string>{"--name=x"}));
}

TEST(FlagSetTest, UnknownFlagIsNotFoundNamingIt) {
  Options options;
  std::vector<std::string> operands;
  const absl::Status status =
      TestFlags().Parse({"--colour=red"}, &options, &operands);
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_EQ(status.message(), "--colour");
}

TEST(FlagSetTest, BadOrMissingValueIsInvalidArgument) {
  Options options;
  std::vector<std::string> operands;
  const absl::Status bad =
      TestFlags().Parse({"--count=many"}, &options, &operands);
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_NE(bad.message().find("--count=many"), std::string::npos) << bad;
  const absl::Status missing =
      TestFlags().Parse({"--name"}, &options, &operands);
  EXPECT_TRUE(absl::IsInvalidArgument(missing)) << missing;
  EXPECT_TRUE(absl::IsInvalidArgument(
      TestFlags().Parse({"--verbose=maybe"}, &options, &operands)));
}

TEST(FlagSetTest, HelpShowsDefaults) {
  const std::string help = TestFlags().Help();
  EXPECT_NE(help.find("--name (default 'default')"), std::string::npos) << help;
  EXPECT_NE(help.find("--count (default 3)"), std::string::npos) << help;
  EXPECT_NE(help.find("--verbose (default false)"), std::string::npos) << help;
}

TEST(FlagSetTest, UnlistedFlagsParseButStayOutOfHelp) {
  FlagSet<Options> advanced;
  advanced.Add(
      "items", "a list", [](Options & o) -> auto& { return o.items; });
  FlagSet<Options> flags;
  flags.Add(
      "name", "a name", [](Options & o) -> auto& { return o.name; });
  flags.AddUnlisted(advanced);
  Options options;
  std::vector<std::string> operands;
  ASSERT_TRUE(
      flags.Parse({"--name=x", "--items=a,b"}, &options, &operands).ok());
  EXPECT_EQ(options.name, "x");
  EXPECT_EQ(options.items, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(flags.Has("items"));
  EXPECT_NE(flags.Help().find("--name"), std::string::npos);
  EXPECT_EQ(flags.Help().find("--items"), std::string::npos);
  EXPECT_NE(advanced.Help().find("--items"), std::string::npos);
}

}  // namespace
}  // namespace gopt::util
