#include "runtime/llamacpp/sequence.h"

#include <cmath>
#include <exception>

namespace shoal::llamacpp {

SamplerPtr MakeSampler(const SamplingConfig& config, uint64_t seed, SamplerPtr grammar) {
  llama_sampler_chain_params params = llama_sampler_chain_default_params();
  params.no_perf = true;
  SamplerPtr chain(llama_sampler_chain_init(params));
  if (grammar) llama_sampler_chain_add(chain.get(), grammar.release());  // the chain owns it
  if (config.temperature <= 0 || config.top_k == 1) {
    llama_sampler_chain_add(chain.get(), llama_sampler_init_greedy());
    return chain;
  }
  // Temperature before top-p, as the contract's Sampler (and OpenAI) do:
  // the nucleus is taken from the tempered distribution.
  if (config.top_k > 0) llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(config.top_k));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_temp(config.temperature));
  if (config.top_p < 1.0f) llama_sampler_chain_add(chain.get(), llama_sampler_init_top_p(config.top_p, 1));
  // llama.cpp's seeds are 32 bits, and LLAMA_DEFAULT_SEED asks it for a
  // random one: fold the job's 64 bits, never onto that value.
  auto seed32 = static_cast<uint32_t>(seed ^ (seed >> 32));
  if (seed32 == LLAMA_DEFAULT_SEED) seed32 = 0;
  llama_sampler_chain_add(chain.get(), llama_sampler_init_dist(seed32));
  return chain;
}

Sequence::Sequence(uint64_t handle, GenerationJob job, std::vector<int32_t> prompt, SamplerPtr grammar,
                   StreamingGenerator::Sink sink, const llama_vocab* vocab, uint32_t context)
    : handle_(handle),
      job_(std::move(job)),
      sink_(std::move(sink)),
      vocab_(vocab),
      context_(context),
      prompt_tokens_(static_cast<uint32_t>(prompt.size())),
      stop_ids_(job_.stop_token_ids.begin(), job_.stop_token_ids.end()),
      tokens_(std::move(prompt)),
      sampler_(MakeSampler(job_.sampling, job_.seed, std::move(grammar))),
      text_(job_.stop) {}

bool Sequence::Sample(llama_context* ctx, int32_t row) {
  const float* logits = llama_get_logits_ith(ctx, row);
  int32_t token;
  try {
    token = llama_sampler_sample(sampler_.get(), ctx, row);
  } catch (const std::exception& e) {
    // llama.cpp's grammar throws when no token can continue the document.
    End(Status(Code::kInferenceError, std::string("llama.cpp's sampler failed: ") + e.what()), "");
    return true;
  }
  tokens_.push_back(token);
  pending_.token_ids.push_back(token);
  if (job_.logprobs) {
    // The model's own log-probability: log-softmax of the raw logits.
    const int32_t vocab = llama_vocab_n_tokens(vocab_);
    float max = logits[0];
    for (int32_t i = 1; i < vocab; ++i) max = std::max(max, logits[i]);
    double z = 0;
    for (int32_t i = 0; i < vocab; ++i) z += std::exp(static_cast<double>(logits[i]) - max);
    pending_.logprobs.push_back(static_cast<float>(logits[token] - max - std::log(z)));
  }
  std::string reason;
  if ((!job_.ignore_eos && llama_vocab_is_eog(vocab_, token)) || stop_ids_.count(token)) {
    reason = "stop";  // an end marker: its text is not output
  } else {
    // Control tokens render as nothing (special=false), as OpenAI-compatible
    // servers skip special tokens in the text they return.
    pending_.text += text_.Push(TokenPiece(vocab_, token, false));
    if (text_.stopped()) reason = "stop";
  }
  const uint32_t generated = static_cast<uint32_t>(tokens_.size()) - prompt_tokens_;
  if (reason.empty() && ((job_.max_tokens > 0 && generated >= job_.max_tokens) || tokens_.size() >= context_)) {
    reason = "length";
  }
  if (reason.empty()) {
    Emit(false);
    return false;
  }
  pending_.text += text_.Finish();
  pending_.finish_reason = std::move(reason);
  Emit(true);
  return true;
}

void Sequence::End(Status status, std::string reason) {
  pending_.status = std::move(status);
  pending_.finish_reason = std::move(reason);
  Emit(true);
}

void Sequence::Emit(bool final) {
  if (!final && pending_.text.empty() && pending_.token_ids.empty()) return;
  pending_.final = final;
  if (final) {
    pending_.prompt_tokens = prompt_tokens_;
    pending_.completion_tokens = static_cast<uint32_t>(tokens_.size()) - prompt_tokens_;
  }
  sink_(std::move(pending_));
  pending_ = GenerationUpdate{};
}

}  // namespace shoal::llamacpp
