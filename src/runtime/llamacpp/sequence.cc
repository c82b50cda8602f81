#include "runtime/llamacpp/sequence.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace shoal::llamacpp {

SamplerPtr MakeSampler(const SamplingConfig& config, uint64_t seed) {
  llama_sampler_chain_params params = llama_sampler_chain_default_params();
  params.no_perf = true;
  SamplerPtr chain(llama_sampler_chain_init(params));
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

Sequence::Sequence(uint64_t handle, GenerationJob job, std::vector<int32_t> prompt, SamplerPtr format,
                   StreamingGenerator::Sink sink, const llama_vocab* vocab, uint32_t context)
    : handle_(handle),
      job_(std::move(job)),
      sink_(std::move(sink)),
      vocab_(vocab),
      context_(context),
      prompt_tokens_(static_cast<uint32_t>(prompt.size())),
      stop_ids_(job_.stop_token_ids.begin(), job_.stop_token_ids.end()),
      tokens_(std::move(prompt)),
      sampler_(MakeSampler(job_.sampling, job_.seed)),
      format_(std::move(format)),
      text_(job_.stop) {
  if (!job_.adjustments.any()) return;
  penalties_ = std::make_unique<TokenPenalties>(job_.adjustments, tokens_);
  if (job_.adjustments.min_tokens > 0) {
    held_back_ = stop_ids_;
    if (!job_.ignore_eos) {
      for (int32_t t = 0, n = llama_vocab_n_tokens(vocab_); t < n; ++t) {
        if (llama_vocab_is_eog(vocab_, t)) held_back_.insert(t);
      }
    }
  }
}

llama_token_data_array Sequence::Candidates(const float* logits) {
  const int32_t n = llama_vocab_n_tokens(vocab_);
  candidates_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) candidates_[static_cast<size_t>(i)] = {i, logits[i], 0.0f};
  return llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
}

int32_t Sequence::SampleFree(const float* logits) {
  llama_token_data_array all = Candidates(logits);
  llama_sampler_apply(sampler_.get(), &all);
  const int32_t token = all.data[all.selected].id;
  llama_sampler_accept(sampler_.get(), token);
  return token;
}

// llama.cpp's grammar is costly over a whole vocabulary (it decodes every
// candidate's text), and most tokens a model prefers fit the format: the
// token sampled freely is checked alone; greedy, then the 64 most likely,
// then the 4,096 most likely (in logit order, so the first that fits is the
// best that fits); the vocabulary is masked (and sampled again) only when
// none of them fits. Greedy, that is the best token the format allows;
// sampled, a free draw kept when it fits, else a draw among the tokens that
// fit, is a draw from the distribution restricted to them (top-k and top-p
// aside, which then cut the free distribution rather than the restricted
// one).
Result<int32_t> Sequence::SampleHeld(const float* logits) {
  constexpr size_t kLikely[] = {64, 4096};  // greedy: checked before the whole vocabulary
  auto all = [&] { return Candidates(logits); };
  try {
    llama_token_data_array free = all();
    llama_sampler_apply(sampler_.get(), &free);
    int32_t token = free.data[free.selected].id;
    llama_token_data one{token, logits[token], 0.0f};
    llama_token_data_array alone{&one, 1, -1, false};
    llama_sampler_apply(format_.get(), &alone);
    const bool greedy = job_.sampling.temperature <= 0 || job_.sampling.top_k == 1;  // as MakeSampler
    if (std::isinf(one.logit) && greedy) {
      llama_token_data_array sorted = all();
      // Ties to the lower id, as llama.cpp's greedy sampler breaks them.
      auto before = [](const llama_token_data& a, const llama_token_data& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
      };
      llama_token_data* const first = sorted.data;
      const size_t most = std::min(kLikely[1], sorted.size);
      std::nth_element(first, first + most - 1, first + sorted.size, before);
      std::sort(first, first + most, before);
      size_t begin = 0;
      for (size_t likely : kLikely) {
        const size_t end = std::min(likely, most);
        llama_token_data_array range{first + begin, end - begin, -1, true};
        llama_sampler_apply(format_.get(), &range);
        for (size_t i = 0; i < range.size && std::isinf(one.logit); ++i) {
          if (std::isinf(range.data[i].logit)) continue;
          one.logit = range.data[i].logit;  // found: the best that fits
          token = range.data[i].id;
        }
        if (!std::isinf(one.logit) || end == most) break;
        begin = end;
      }
    }
    if (std::isinf(one.logit)) {
      llama_token_data_array held = all();
      llama_sampler_apply(format_.get(), &held);
      llama_sampler_apply(sampler_.get(), &held);
      const llama_token_data& chosen = held.data[held.selected];
      // Accepting a token the grammar refused would abort the process.
      if (std::isinf(chosen.logit)) return Status(Code::kInferenceError, "no token of the model continues the document");
      token = chosen.id;
    }
    llama_sampler_accept(format_.get(), token);
    llama_sampler_accept(sampler_.get(), token);
    return token;
  } catch (const std::exception& e) {  // llama.cpp's grammar throws on a token it cannot take
    return Status(Code::kInferenceError, std::string("llama.cpp's grammar failed: ") + e.what());
  }
}

bool Sequence::Sample(llama_context* ctx, int32_t row) {
  const float* const model_logits = llama_get_logits_ith(ctx, row);
  const float* logits = model_logits;
  if (penalties_) {
    adjusted_.assign(model_logits, model_logits + llama_vocab_n_tokens(vocab_));
    penalties_->Apply(adjusted_.data(), adjusted_.size(), static_cast<uint32_t>(tokens_.size()) - prompt_tokens_,
                      held_back_);
    logits = adjusted_.data();
  }
  int32_t token;
  if (format_) {
    auto held = SampleHeld(logits);
    if (!held.ok()) {
      End(held.status(), "");
      return true;
    }
    token = *held;
  } else if (penalties_) {
    token = SampleFree(logits);
  } else {
    token = llama_sampler_sample(sampler_.get(), ctx, row);
  }
  if (penalties_) penalties_->Add(token);
  tokens_.push_back(token);
  pending_.token_ids.push_back(token);
  if (job_.logprobs) {
    // The model's own log-probability: log-softmax of the raw logits.
    const int32_t vocab = llama_vocab_n_tokens(vocab_);
    float max = model_logits[0];
    for (int32_t i = 1; i < vocab; ++i) max = std::max(max, model_logits[i]);
    double z = 0;
    for (int32_t i = 0; i < vocab; ++i) z += std::exp(static_cast<double>(model_logits[i]) - max);
    pending_.logprobs.push_back(static_cast<float>(model_logits[token] - max - std::log(z)));
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
