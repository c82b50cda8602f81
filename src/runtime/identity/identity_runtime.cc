#include "runtime/identity/identity_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <thread>

namespace shoal {
namespace {

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class IdentityModel final : public Model {
 public:
  IdentityModel(ModelConfig config, IdentityOptions opts) : config_(std::move(config)), opts_(opts) {}

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return size_t{opts_.memory_mb} << 20; }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override {
    uint64_t batch_tokens = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (FailsOn(in[i].text, &out[i].status)) continue;
      if (!in[i].lora.empty() && !HasLora(in[i].lora)) {
        out[i].status = Status(Code::kModelNotFound,
                               "model '" + config_.id + "' has no LoRA '" + std::string(in[i].lora) + "'");
        continue;
      }
      auto tokens = IdentityTokens(in[i].text);
      if (tokens.size() > config_.max_input_tokens) {
        if (!in[i].truncate) {
          out[i].status = InvalidInput("input has " + std::to_string(tokens.size()) +
                                       " tokens, over the model's limit of " +
                                       std::to_string(config_.max_input_tokens) +
                                       "; send \"truncate\": true to cut it");
          continue;
        }
        tokens.resize(config_.max_input_tokens);
        out[i].truncated = true;
      }
      out[i].status = Status::Ok();
      out[i].tokens = static_cast<uint32_t>(tokens.size());
      out[i].dense = IdentityVector(tokens, opts_.dim, in[i].normalize, in[i].lora);
      batch_tokens += tokens.size();
    }
    // Simulated device time: sleeping, not spinning, as a GPU leaves the CPU free.
    uint64_t us = opts_.us_per_batch + opts_.us_per_token * batch_tokens;
    if (opts_.efficient_batch > 0 && in.size() > opts_.efficient_batch) {
      us += uint64_t{opts_.us_per_excess_item} * (in.size() - opts_.efficient_batch);
    }
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
    return Status::Ok();
  }

  // Whitespace words, each with a stable id, so the tokenize path can be
  // tested without a real model.
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      if (FailsOn(in[i].text, &out[i].status)) continue;
      out[i].status = Status::Ok();
      for (std::string_view word : IdentityTokens(in[i].text)) {
        Token t;
        t.id = static_cast<int32_t>(Fnv1a(word) % 1000000);
        t.text = std::string(word);
        t.has_offsets = true;
        t.start = word.empty() ? 0 : static_cast<uint32_t>(word.data() - in[i].text.data());
        t.stop = t.start + static_cast<uint32_t>(word.size());
        out[i].tokens.push_back(std::move(t));
      }
    }
    return Status::Ok();
  }

  // Any list: the names are all it keeps (identity_runtime.h).
  Status UpdateLoras(std::span<const LoraConfig> loras) override {
    std::vector<std::string> names;
    for (const LoraConfig& l : loras) names.push_back(l.name);
    std::lock_guard lock(loras_mu_);
    loras_ = std::move(names);
    return Status::Ok();
  }

 private:
  bool HasLora(std::string_view name) const {
    std::lock_guard lock(loras_mu_);
    return std::find(loras_.begin(), loras_.end(), name) != loras_.end();
  }

  // The deliberate fault (`fail_on`): whether `text` triggers it, with the
  // item's error in `status` when it does.
  bool FailsOn(std::string_view text, Status* status) const {
    if (opts_.fail_on.empty() || text.find(opts_.fail_on) == std::string_view::npos) return false;
    *status = Status(Code::kInferenceError, "identity: the input contains fail_on \"" + opts_.fail_on +
                                                "\" (a deliberate failure of the test runtime)");
    return true;
  }

  ModelConfig config_;
  IdentityOptions opts_;
  // UpdateLoras runs on the worker's catalog thread while executors encode.
  mutable std::mutex loras_mu_;
  std::vector<std::string> loras_;  // guarded by loras_mu_
};

}  // namespace

std::vector<std::string_view> IdentityTokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  if (tokens.empty()) tokens.push_back(std::string_view());  // the empty input is one token
  return tokens;
}

std::vector<float> IdentityVector(const std::vector<std::string_view>& tokens, uint32_t dim,
                                  bool normalize, std::string_view lora) {
  uint64_t seed = 0x5348'4f41'4cull;  // "SHOAL"
  if (!lora.empty()) seed ^= Fnv1a(lora);  // the base's seed stays as it was
  for (auto t : tokens) seed = Fnv1a(t, seed) ^ (seed >> 17);
  std::vector<float> v(dim);
  double norm2 = 0;
  for (uint32_t i = 0; i < dim; ++i) {
    // Uniform in [-1, 1), 24 bits of the hash.
    v[i] = static_cast<float>(static_cast<int64_t>(SplitMix64(seed) >> 40) - (1 << 23)) /
           static_cast<float>(1 << 23);
    norm2 += static_cast<double>(v[i]) * v[i];
  }
  if (normalize && norm2 > 0) {
    const float inv = static_cast<float>(1.0 / std::sqrt(norm2));
    for (auto& x : v) x *= inv;
  }
  return v;
}

Result<std::unique_ptr<Model>> IdentityRuntime::Load(const ModelConfig& config, const LoadContext&) {
  IdentityOptions opts;
  OptionReader read(config.options);
  SHOAL_RETURN_IF_ERROR(read.Count("dim", 1, 65536, &opts.dim));
  SHOAL_RETURN_IF_ERROR(read.Count("us_per_token", 0, UINT32_MAX, &opts.us_per_token));
  SHOAL_RETURN_IF_ERROR(read.Count("us_per_batch", 0, UINT32_MAX, &opts.us_per_batch));
  SHOAL_RETURN_IF_ERROR(read.Count("efficient_batch", 0, UINT32_MAX, &opts.efficient_batch));
  SHOAL_RETURN_IF_ERROR(read.Count("us_per_excess_item", 0, UINT32_MAX, &opts.us_per_excess_item));
  SHOAL_RETURN_IF_ERROR(read.Count("memory_mb", 1, UINT32_MAX, &opts.memory_mb));
  SHOAL_RETURN_IF_ERROR(read.Count("load_ms", 0, UINT32_MAX, &opts.load_ms));
  SHOAL_RETURN_IF_ERROR(read.String("fail_on", &opts.fail_on));
  SHOAL_RETURN_IF_ERROR(read.Finish());
  if (opts.load_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opts.load_ms));
  return std::unique_ptr<Model>(std::make_unique<IdentityModel>(config, opts));
}

Result<uint64_t> IdentityRuntime::CheckLora(const ModelConfig& base, const LoraConfig& lora) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(lora.path, ec)) {
    return InvalidInput("LoRA '" + lora.name + "' of " + base.id + ": " + lora.path + " is not a directory");
  }
  if (!fs::is_regular_file(fs::path(lora.path) / "adapter_config.json", ec)) {
    return InvalidInput("LoRA '" + lora.name + "' of " + base.id + ": " + lora.path +
                        " has no adapter_config.json (a PEFT adapter directory)");
  }
  return kIdentityLoraBytes;
}

}  // namespace shoal
