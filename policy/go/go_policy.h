#ifndef GOPT_POLICY_GO_GO_POLICY_H_
#define GOPT_POLICY_GO_GO_POLICY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/policy.h"

namespace gopt::policy {

// The factory for card kind "go": verifies the checkpoint the card names
// (card["checkpoint"], relative to `directory`) against the card's
// checkpoint_sha256 (VerifiedCheckpointPath, policy/checkpoint_integrity.h),
// loads it and serves it. The policy's
// Propose featurizes the graph and topology, runs the network once and
// scores best-of-K sampled plans plus the greedy decode (zero-shot, stage
// "zero-shot"); then, when options.fine_tune_steps > 0 and the deadline
// allows, fine-tunes a private copy of the weights with PPO on this graph
// (stage "fine-tune", progress after every step), honouring `cancelled`,
// and returns the best plan seen (Plan::method "go"). Tasks outside
// options.tasks keep options.base_plan's decisions or the defaults; layout
// is never decided (InvalidArgument when it is the only task asked for).
// The policy is immutable: Propose is const and thread-safe.
//
// Factory errors: InvalidArgument for a card that is not kind "go" or names
// no checkpoint; FailedPrecondition for a card that records no hash of its
// checkpoint; DataLoss for a checkpoint whose hash differs from the card's
// (message: file, expected and actual hash); the checkpoint's load errors
// (NotFound, DataLoss).
//
//   PolicyFactory factory = GoPolicyFactory();
//   ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, factory(dir, card));
PolicyFactory GoPolicyFactory();

// Reads `directory`/card.json and calls GoPolicyFactory. NotFound when the
// card is missing, InvalidArgument when it is not JSON.
absl::StatusOr<std::unique_ptr<Policy>> LoadGoPolicy(
    const std::string& directory);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_GO_GO_POLICY_H_
