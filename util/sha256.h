#ifndef GOPT_UTIL_SHA256_H_
#define GOPT_UTIL_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace gopt {

// SHA-256 (FIPS 180-4, through OpenSSL's EVP interface) of a stream of
// bytes: stable across processes, hosts and builds, so digests can be
// stored and compared later (plan store keys and checksums).
//
//   Sha256 hash;
//   hash.Update("abc");
//   std::string hex = hash.HexDigest();  // "ba7816bf..."
//
// Small updates are gathered in a buffer and handed to OpenSSL in blocks
// (a call per 8-byte field cost more than the hashing). Not thread-safe;
// one per digest.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view bytes);
  // Fixed-width little-endian encodings, so a field boundary is never
  // ambiguous.
  void UpdateInt64(int64_t value);
  void UpdateDouble(double value);
  // The length first, then the bytes.
  void UpdateString(absl::string_view bytes);

  // The 32-byte digest; the hasher must not be used afterwards.
  std::string Digest();
  // Digest() as 64 lowercase hex digits.
  std::string HexDigest();

 private:
  struct Context;
  // Hands the buffered bytes to OpenSSL.
  void Flush();

  std::unique_ptr<Context> context_;
};

// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace gopt

#endif  // GOPT_UTIL_SHA256_H_
