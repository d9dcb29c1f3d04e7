#include "util/sha256.h"

#include <openssl/evp.h>

#include <cstring>

#include "absl/strings/escaping.h"

namespace gopt {

namespace {
constexpr size_t kBufferBytes = 4096;
}  // namespace

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
  // Bytes not yet handed to `md`: the first `buffered` of `buffer`.
  size_t buffered = 0;
  unsigned char buffer[kBufferBytes];
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  context_->md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(context_->md); }

void Sha256::Flush() {
  if (context_->buffered == 0) return;
  EVP_DigestUpdate(context_->md, context_->buffer, context_->buffered);
  context_->buffered = 0;
}

void Sha256::Update(absl::string_view bytes) {
  Context& c = *context_;
  if (bytes.size() > kBufferBytes - c.buffered) {
    Flush();
    if (bytes.size() >= kBufferBytes) {
      EVP_DigestUpdate(c.md, bytes.data(), bytes.size());
      return;
    }
  }
  std::memcpy(c.buffer + c.buffered, bytes.data(), bytes.size());
  c.buffered += bytes.size();
}

void Sha256::UpdateInt64(int64_t value) {
  Context& c = *context_;
  if (kBufferBytes - c.buffered < 8) Flush();
  for (int i = 0; i < 8; ++i) {
    c.buffer[c.buffered + i] =
        static_cast<unsigned char>(static_cast<uint64_t>(value) >> (8 * i));
  }
  c.buffered += 8;
}

void Sha256::UpdateDouble(double value) {
  // -0.0 and 0.0 cost the same; one encoding for both.
  if (value == 0) value = 0;
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  UpdateInt64(bits);
}

void Sha256::UpdateString(absl::string_view bytes) {
  UpdateInt64(static_cast<int64_t>(bytes.size()));
  Update(bytes);
}

std::string Sha256::Digest() {
  Flush();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context_->md, digest, &size);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256::HexDigest() { return absl::BytesToHexString(Digest()); }

std::string Sha256Hex(absl::string_view bytes) {
  Sha256 hash;
  hash.Update(bytes);
  return hash.HexDigest();
}

}  // namespace gopt
