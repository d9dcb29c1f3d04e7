#include "util/command_table.h"

#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"

namespace gopt::util {
namespace {

struct CopyOptions {
  std::string from;
  bool verbose = false;
};
struct CountOptions {
  int limit = 10;
};
using Options = std::variant<HelpOptions, CopyOptions, CountOptions>;

CommandTable<Options> TestTable() {
  CommandTable<Options> table("tool", "tool: does things\n{commands}");
  FlagSet<CopyOptions> copy;
  copy.Add(
      "verbose", "talk", [](CopyOptions & o) -> auto& { return o.verbose; });
  table.Add<CopyOptions>(
      "copy", "copy FROM", "copies", copy,
      [](std::vector<std::string> operands, CopyOptions* o) {
        if (operands.size() != 1) {
          return absl::InvalidArgumentError("expected FROM");
        }
        o->from = operands[0];
        return absl::OkStatus();
      },
      [](const CopyOptions& o, std::ostream& out) {
        out << "copied " << o.from;
        return absl::OkStatus();
      });
  FlagSet<CountOptions> count;
  count.Add(
      "limit", "at most", [](CountOptions & o) -> auto& { return o.limit; });
  table.Add<CountOptions>(
      "count", "count", "counts", count,
      [](std::vector<std::string>, CountOptions*) { return absl::OkStatus(); },
      [](const CountOptions& o, std::ostream&) {
        return absl::OutOfRangeError(absl::StrCat("limit ", o.limit));
      },
      // Initial options (defaults that may depend on the arguments).
      [](const std::vector<std::string>&) { return CountOptions{100}; });
  return table;
}

TEST(CommandTableTest, ParsesIntoTheCommandsOptions) {
  absl::StatusOr<ParsedCommand<Options>> parsed =
      TestTable().Parse({"tool", "copy", "--verbose", "a.txt"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->name, "copy");
  EXPECT_EQ(std::get<CopyOptions>(parsed->options).from, "a.txt");
  EXPECT_TRUE(std::get<CopyOptions>(parsed->options).verbose);
}

TEST(CommandTableTest, InitialOptionsComeBeforeTheFlags) {
  auto parsed = TestTable().Parse({"tool", "count"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(std::get<CountOptions>(parsed->options).limit, 100);
  parsed = TestTable().Parse({"tool", "count", "--limit=3"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(std::get<CountOptions>(parsed->options).limit, 3);
}

TEST(CommandTableTest, AnotherCommandsFlagIsRefusedNamingBoth) {
  auto parsed = TestTable().Parse({"tool", "copy", "--limit=3", "a"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "tool copy: --limit is not a flag of copy (count takes it); see "
            "tool help copy");
}

TEST(CommandTableTest, FinishErrorsNameTheCommand) {
  auto parsed = TestTable().Parse({"tool", "copy"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
  EXPECT_EQ(parsed.status().message(), "tool copy: expected FROM");
}

TEST(CommandTableTest, RunCallsTheParsedCommandsBody) {
  const CommandTable<Options> table = TestTable();
  std::ostringstream out;
  auto parsed = table.Parse({"tool", "copy", "a.txt"});
  ASSERT_TRUE(parsed.ok());
  ASSERT_TRUE(table.Run(*parsed, out).ok());
  EXPECT_EQ(out.str(), "copied a.txt");

  parsed = table.Parse({"tool", "count", "--limit=3"});
  ASSERT_TRUE(parsed.ok());
  const absl::Status status = table.Run(*parsed, out);
  EXPECT_TRUE(absl::IsOutOfRange(status));
  EXPECT_EQ(status.message(), "limit 3");
}

TEST(CommandTableTest, RunPrintsHelp) {
  const CommandTable<Options> table = TestTable();
  std::ostringstream out;
  auto parsed = table.Parse({"tool", "help", "copy"});
  ASSERT_TRUE(parsed.ok());
  ASSERT_TRUE(table.Run(*parsed, out).ok());
  EXPECT_EQ(out.str(), table.Help("copy") + "\n");
}

TEST(CommandTableTest, HelpForms) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"tool", "help", "copy"},
                                             {"tool", "copy", "--help"}}) {
    auto parsed = TestTable().Parse(args);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(std::get<HelpOptions>(parsed->options).command, "copy");
  }
  EXPECT_EQ(TestTable().Help(""),
            "tool: does things\n  copy FROM\n      copies\n  count\n      "
            "counts\n");
  EXPECT_NE(TestTable().Help("count").find("--limit (default 10)"),
            std::string::npos);
  EXPECT_FALSE(TestTable().Parse({"tool"}).ok());
  EXPECT_FALSE(TestTable().Parse({"tool", "paint"}).ok());
  EXPECT_FALSE(TestTable().Parse({"tool", "help", "paint"}).ok());
}

}  // namespace
}  // namespace gopt::util
