#include "common/sha256.h"

#include <openssl/evp.h>

#include "common/hex.h"

namespace shoal {

struct Sha256::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~State() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
}
Sha256::~Sha256() = default;

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size());
}

Sha256::Digest Sha256::Finish() {
  Digest d{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->ctx, d.data(), &n);
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
  return d;
}

std::string Sha256::FinishHex() {
  const Digest d = Finish();
  return LowerHex(d.data(), d.size());
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.FinishHex();
}

}  // namespace shoal
