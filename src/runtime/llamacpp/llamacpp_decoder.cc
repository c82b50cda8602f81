#include "runtime/llamacpp/llamacpp_decoder.h"

#include <algorithm>

namespace shoal::llamacpp {
namespace {

// llama.cpp keeps per-sequence state for at most 256 sequences; past a few
// dozen a CPU gains nothing from more.
constexpr uint32_t kMaxSequences = 64;

}  // namespace

Result<std::unique_ptr<Model>> LlamaCppDecoder::Create(ModelPtr model, const ModelConfig& config, uint32_t context,
                                                       std::unique_ptr<Threadpool> pool) {
  if (!llama_model_has_decoder(model.get())) {
    return Status(Code::kModelLoadFailed, "model '" + config.id + "': the GGUF's model does not generate");
  }
  std::unique_ptr<LlamaCppDecoder> d(new LlamaCppDecoder(std::move(model), config));
  SHOAL_ASSIGN_OR_RETURN(d->prompts_, PromptBuilder::Create(d->model_.get()));
  Scheduler::Limits limits;
  limits.sequences = std::clamp<uint32_t>(config.max_batch_requests, 1, kMaxSequences);
  limits.context = context;
  limits.batch_tokens = config.max_batch_tokens;
  SHOAL_ASSIGN_OR_RETURN(d->scheduler_, Scheduler::Create(d->model_.get(), d->prompts_.get(), limits, std::move(pool)));
  d->memory_bytes_ = llama_model_size(d->model_.get()) + d->scheduler_->memory_bytes();
  return std::unique_ptr<Model>(std::move(d));
}

Status LlamaCppDecoder::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return TokenizeItems(llama_model_get_vocab(model_.get()), in, out);
}

}  // namespace shoal::llamacpp
