// UseLiteModel: the bundled Universal Sentence Encoder Lite behind the
// Runtime interface (Encode and Tokenize; it has no pair head).
//
// USE-Lite reads at most 128 tokens. A longer input fails with INVALID_INPUT
// unless the request asked to truncate — the TF.js graph would clip
// silently, Shoal does not.
//
// Threading: immutable after Load; calls may run concurrently.
#pragma once

#include <memory>

#include "runtime/native/use_lite/use_lite.h"
#include "runtime/runtime.h"

namespace shoal::native {

class UseLiteModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, int threads);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return use_lite_->memory_bytes(); }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;

 private:
  UseLiteModel() = default;

  ModelConfig config_;
  std::unique_ptr<UseLite> use_lite_;
  size_t max_tokens_ = UseLite::kMaxTokens;
  int threads_ = 1;
};

}  // namespace shoal::native
