#ifndef GOPT_POLICY_SHA256_H_
#define GOPT_POLICY_SHA256_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::policy {

// SHA-256 (FIPS 180-4), streaming: Update any number of times, then Finish
// once. Used to fingerprint policy checkpoints (checkpoint_integrity.h), not
// for secrets: it is not constant-time. A Sha256 is not thread-safe; use one
// per thread.
//
//   Sha256 hash;
//   hash.Update("ab");
//   hash.Update("c");
//   std::string hex = Sha256::Hex(hash.Finish());  // "ba7816bf...15ad"
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  // Appends `data` to the message. Must not be called after Finish.
  void Update(absl::string_view data);

  // Pads the message and returns its digest. Call once.
  Digest Finish();

  // `digest` as 64 lowercase hex digits.
  static std::string Hex(const Digest& digest);

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

// The SHA-256 of `data` as 64 lowercase hex digits.
//
//   Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223"
//                       "b00361a396177a9cb410ff61f20015ad"
std::string Sha256Hex(absl::string_view data);

// The SHA-256 of the file at `path` (read in chunks), as 64 lowercase hex
// digits. NotFound when the file cannot be opened; DataLoss when reading
// fails part-way.
absl::StatusOr<std::string> Sha256HexOfFile(const std::string& path);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_SHA256_H_
