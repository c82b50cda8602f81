#include "runtime/llamacpp/llamacpp_embedder.h"

#include <algorithm>
#include <cmath>

#include "runtime/llamacpp/llamacpp_backend.h"

namespace shoal::llamacpp {
namespace {

// `full` is `content` with the tokenizer's specials around it; cuts the
// content so the whole is `limit` tokens, the specials kept (as Hugging
// Face tokenizers truncate). Falls back to a plain cut when `content` is
// not found inside `full`.
std::vector<int32_t> Truncate(const std::vector<int32_t>& full, const std::vector<int32_t>& content, size_t limit) {
  const size_t specials = full.size() - std::min(full.size(), content.size());
  auto at = std::search(full.begin(), full.end(), content.begin(), content.end());
  if (content.empty() || at == full.end() || specials >= limit) {
    return {full.begin(), full.begin() + static_cast<std::ptrdiff_t>(limit)};
  }
  std::vector<int32_t> out(full.begin(), at);
  out.insert(out.end(), content.begin(), content.begin() + static_cast<std::ptrdiff_t>(limit - specials));
  out.insert(out.end(), at + static_cast<std::ptrdiff_t>(content.size()), full.end());
  return out;
}

}  // namespace

Result<std::unique_ptr<Model>> LlamaCppEmbedder::Create(ModelPtr model, const ModelConfig& config, uint32_t context,
                                                        std::unique_ptr<Threadpool> pool) {
  const uint32_t limit = std::min(config.max_input_tokens, context);
  llama_context_params p = llama_context_default_params();
  p.n_ctx = limit;  // a decoder-based embedder keeps one text in its cache, cleared after it
  p.n_batch = limit;
  p.n_ubatch = limit;  // without causal attention a text is computed in one piece
  p.n_seq_max = 1;
  p.n_threads = pool->threads();
  p.n_threads_batch = pool->threads();
  p.embeddings = true;
  p.no_perf = true;
  LogCapture capture;
  ContextPtr ctx(llama_init_from_model(model.get(), p));
  if (!ctx) return Status(Code::kModelLoadFailed, "llama.cpp could not make a context: " + capture.Reason());
  const enum llama_pooling_type pooling = llama_pooling_type(ctx.get());
  if (pooling == LLAMA_POOLING_TYPE_NONE || pooling == LLAMA_POOLING_TYPE_RANK) {
    return Status(Code::kModelLoadFailed, "model '" + config.id +
                                              "': the GGUF names no embedding pooling (mean, cls or last), "
                                              "so it is not an embedding model");
  }
  llama_attach_threadpool(ctx.get(), pool->get(), pool->get());
  return std::unique_ptr<Model>(new LlamaCppEmbedder(std::move(model), std::move(pool), std::move(ctx), config, limit));
}

LlamaCppEmbedder::LlamaCppEmbedder(ModelPtr model, std::unique_ptr<Threadpool> pool, ContextPtr ctx,
                                   const ModelConfig& config, uint32_t limit)
    : model_(std::move(model)),
      vocab_(llama_model_get_vocab(model_.get())),
      config_(config),
      limit_(limit),
      encoder_only_(llama_model_has_encoder(model_.get()) && !llama_model_has_decoder(model_.get())),
      pool_(std::move(pool)),
      ctx_(std::move(ctx)),
      batch_(llama_batch_init(static_cast<int32_t>(limit), 0, 1)) {
  memory_bytes_ = llama_model_size(model_.get()) + llama_state_get_size(ctx_.get());
}

LlamaCppEmbedder::~LlamaCppEmbedder() { llama_batch_free(batch_); }

Status LlamaCppEmbedder::Prepare(const EncodeInput& in, std::vector<int32_t>* ids, EncodeOutput* out) const {
  SHOAL_ASSIGN_OR_RETURN(*ids, TokenizeText(vocab_, in.text, true, true));
  if (ids->size() > limit_) {
    if (!in.truncate) {
      return InvalidInput("the text is " + std::to_string(ids->size()) + " tokens; model '" + config_.id +
                          "' takes at most " + std::to_string(limit_) + " (ask for truncation to cut it)");
    }
    SHOAL_ASSIGN_OR_RETURN(auto content, TokenizeText(vocab_, in.text, false, true));
    *ids = Truncate(*ids, content, limit_);
    out->truncated = true;
  }
  if (ids->empty()) return InvalidInput("the text gives no tokens");
  return Status::Ok();
}

Status LlamaCppEmbedder::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  std::vector<std::vector<int32_t>> ids(in.size());
  std::vector<size_t> ready;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = EncodeOutput{};
    if (!in[i].lora.empty()) {
      out[i].status = Status(Code::kModelNotFound, "llamacpp runtime has no LoRA adapters ('" +
                                                       std::string(in[i].lora) + "')");
      continue;
    }
    out[i].status = Prepare(in[i], &ids[i], &out[i]);
    if (out[i].status.ok()) ready.push_back(i);
  }
  std::lock_guard lock(mu_);
  for (size_t i : ready) SHOAL_RETURN_IF_ERROR(Run(ids[i], in[i].normalize, &out[i]));
  return Status::Ok();
}

Status LlamaCppEmbedder::Run(const std::vector<int32_t>& ids, bool normalize, EncodeOutput* out) {
  batch_.n_tokens = static_cast<int32_t>(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    batch_.token[t] = ids[t];
    batch_.pos[t] = static_cast<llama_pos>(t);
    batch_.n_seq_id[t] = 1;
    batch_.seq_id[t][0] = 0;
    batch_.logits[t] = 1;  // pooling reads every token's output
  }
  LogCapture capture;
  const int32_t rc = encoder_only_ ? llama_encode(ctx_.get(), batch_) : llama_decode(ctx_.get(), batch_);
  if (llama_memory_t mem = llama_get_memory(ctx_.get())) llama_memory_clear(mem, true);
  if (rc != 0) {
    return Status(Code::kInferenceError, "llama.cpp failed to encode a text (" + std::to_string(rc) +
                                             "): " + capture.Reason());
  }
  const float* v = llama_get_embeddings_seq(ctx_.get(), 0);
  if (!v) return Status(Code::kInferenceError, "llama.cpp gave no pooled embedding");
  out->dense.assign(v, v + llama_model_n_embd_out(model_.get()));
  out->tokens = static_cast<uint32_t>(ids.size());
  if (normalize) {
    double norm = 0;
    for (float x : out->dense) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (float& x : out->dense) x = static_cast<float>(x / norm);
    }
  }
  return Status::Ok();
}

Status LlamaCppEmbedder::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return TokenizeItems(vocab_, in, out);
}

}  // namespace shoal::llamacpp
