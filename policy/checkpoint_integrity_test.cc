#include "policy/checkpoint_integrity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "policy/sha256.h"

namespace gopt::policy {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A fresh policy directory holding `weights` as model.pt.
std::string PolicyDir(const std::string& name, const std::string& weights) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("integrity_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "model.pt", std::ios::binary) << weights;
  return dir.string();
}

nlohmann::json Card() {
  return {{"format_version", 1}, {"kind", "go"}, {"checkpoint", "model.pt"}};
}

TEST(RecordCheckpointSha256Test, RecordsTheCheckpointsHashAndWhoWroteIt) {
  const std::string dir = PolicyDir("record", "weights");
  nlohmann::json card = Card();
  ASSERT_TRUE(RecordCheckpointSha256(dir, "gopt-train test", &card).ok());
  EXPECT_EQ(card[kCheckpointSha256Key],
            (nlohmann::json{{"model.pt", Sha256Hex("weights")}}));
  EXPECT_EQ(card[kCheckpointSha256RecordedByKey], "gopt-train test");
}

TEST(RecordCheckpointSha256Test, MissingCheckpointIsNotFound) {
  const std::string dir = PolicyDir("record_missing", "weights");
  nlohmann::json card = Card();
  card["checkpoint"] = "other.pt";
  EXPECT_EQ(RecordCheckpointSha256(dir, "test", &card).code(),
            absl::StatusCode::kNotFound);
}

TEST(VerifiedCheckpointPathTest, MatchingHashReturnsThePath) {
  const std::string dir = PolicyDir("match", "weights");
  nlohmann::json card = Card();
  ASSERT_TRUE(RecordCheckpointSha256(dir, "test", &card).ok());
  absl::StatusOr<std::string> path = VerifiedCheckpointPath(dir, card);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, (std::filesystem::path(dir) / "model.pt").string());
}

TEST(VerifiedCheckpointPathTest, ChangedWeightsAreDataLossNamingFileAndHashes) {
  const std::string dir = PolicyDir("changed", "weights");
  nlohmann::json card = Card();
  ASSERT_TRUE(RecordCheckpointSha256(dir, "test", &card).ok());
  // Same size, every byte zeroed: what a zeroed checkpoint looks like.
  std::ofstream(dir + "/model.pt", std::ios::binary)
      << std::string(7, '\0');
  absl::StatusOr<std::string> path = VerifiedCheckpointPath(dir, card);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(path.status().message(),
              AllOf(HasSubstr("model.pt"), HasSubstr(Sha256Hex("weights")),
                    HasSubstr(Sha256Hex(std::string(7, '\0')))));
}

TEST(VerifiedCheckpointPathTest, CardWithoutHashesIsFailedPrecondition) {
  const std::string dir = PolicyDir("unhashed", "weights");
  absl::StatusOr<std::string> path = VerifiedCheckpointPath(dir, Card());
  EXPECT_EQ(path.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(path.status().message(),
              AllOf(HasSubstr("model.pt"), HasSubstr("gopt-train card-hash")));
}

TEST(VerifiedCheckpointPathTest, HashOfAnotherFileOnlyIsFailedPrecondition) {
  const std::string dir = PolicyDir("other_file", "weights");
  nlohmann::json card = Card();
  card[kCheckpointSha256Key] = {{"extra.bin", Sha256Hex("weights")}};
  EXPECT_EQ(VerifiedCheckpointPath(dir, card).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(VerifiedCheckpointPathTest, EveryListedFileIsVerified) {
  const std::string dir = PolicyDir("every_file", "weights");
  std::ofstream(dir + "/extra.bin", std::ios::binary) << "extra";
  nlohmann::json card = Card();
  card[kCheckpointSha256Key] = {{"model.pt", Sha256Hex("weights")},
                                {"extra.bin", Sha256Hex("changed")}};
  absl::StatusOr<std::string> path = VerifiedCheckpointPath(dir, card);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(path.status().message(), HasSubstr("extra.bin"));
}

TEST(VerifiedCheckpointPathTest, MissingFileIsNotFound) {
  const std::string dir = PolicyDir("missing", "weights");
  nlohmann::json card = Card();
  ASSERT_TRUE(RecordCheckpointSha256(dir, "test", &card).ok());
  std::filesystem::remove(dir + "/model.pt");
  EXPECT_EQ(VerifiedCheckpointPath(dir, card).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(VerifiedCheckpointPathTest, MalformedCardsAreInvalidArgument) {
  const std::string dir = PolicyDir("malformed", "weights");
  nlohmann::json no_checkpoint = Card();
  no_checkpoint.erase("checkpoint");
  EXPECT_EQ(VerifiedCheckpointPath(dir, no_checkpoint).status().code(),
            absl::StatusCode::kInvalidArgument);

  nlohmann::json not_a_map = Card();
  not_a_map[kCheckpointSha256Key] = Sha256Hex("weights");
  EXPECT_EQ(VerifiedCheckpointPath(dir, not_a_map).status().code(),
            absl::StatusCode::kInvalidArgument);

  nlohmann::json short_hash = Card();
  short_hash[kCheckpointSha256Key] = {{"model.pt", "abc"}};
  EXPECT_EQ(VerifiedCheckpointPath(dir, short_hash).status().code(),
            absl::StatusCode::kInvalidArgument);

  nlohmann::json upper_case = Card();
  std::string upper = Sha256Hex("weights");
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  upper_case[kCheckpointSha256Key] = {{"model.pt", upper}};
  EXPECT_EQ(VerifiedCheckpointPath(dir, upper_case).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VerifiedCheckpointPathTest, PathsOutsideThePolicyDirectoryAreRefused) {
  const std::string dir = PolicyDir("escape", "weights");
  nlohmann::json parent = Card();
  parent["checkpoint"] = "../integrity_match/model.pt";
  EXPECT_EQ(VerifiedCheckpointPath(dir, parent).status().code(),
            absl::StatusCode::kInvalidArgument);

  nlohmann::json absolute = Card();
  absolute[kCheckpointSha256Key] = {{"model.pt", Sha256Hex("weights")},
                                    {"/etc/hostname", Sha256Hex("")}};
  EXPECT_EQ(VerifiedCheckpointPath(dir, absolute).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::policy
