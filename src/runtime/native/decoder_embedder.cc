#include "runtime/native/decoder_embedder.h"

#include <algorithm>
#include <filesystem>

#include "common/log.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/tokenize_task.h"

namespace shoal::native {
namespace {

constexpr uint32_t kBlockTokens = 16;
// The scratch cache's size when the batch limit asks for more: 64 MiB,
// and never less than one input of the model's limit.
constexpr size_t kCacheBytes = size_t{64} << 20;

uint32_t BlocksFor(size_t tokens) { return static_cast<uint32_t>((tokens + kBlockTokens - 1) / kBlockTokens); }

}  // namespace

Result<std::unique_ptr<Model>> DecoderEmbedder::Load(const ModelConfig& spec, const NativeOptions& options,
                                                     const LoadContext& ctx) {
  namespace fs = std::filesystem;
  if (spec.task != Task::kEncode) {
    return InvalidInput(spec.path + ": a decoder embedder encodes; register it with task: encode");
  }
  auto pooling = LoadPoolingConfig(spec.path);
  if (!pooling.ok()) return pooling.status();
  if (pooling->splade || pooling->colbert || pooling->bge_m3) {
    return InvalidInput(spec.path + ": a decoder embedder gives a pooled vector (no SPLADE, ColBERT or bge-m3 heads)");
  }
  if (!pooling->from_files && !options.pooling) {
    return InvalidInput(spec.path + ": a decoder with no sentence-transformers Pooling module; say how it pools "
                        "(native.pooling)");
  }
  auto config = LoadDecoderConfig(spec.path);
  if (!config.ok()) return config.status();
  config->bidirectional = options.bidirectional.value_or(config->bidirectional);
  std::unique_ptr<DecoderEmbedder> m(new DecoderEmbedder());
  m->config_ = spec;
  m->threads_ = std::max(1, ctx.threads);
  m->pooling_ = options.pooling.value_or(pooling->pooling);
  auto tokenizer = LoadModelTokenizer(spec.path);
  if (!tokenizer.ok()) return tokenizer.status();
  m->tokenizer_ = std::move(tokenizer).value();

  m->max_tokens_ = std::min<size_t>(spec.max_input_tokens, config->max_position_embeddings);
  const size_t per_token = static_cast<size_t>(config->num_hidden_layers) * 2 * config->num_key_value_heads *
                           config->head_dim * sizeof(float);
  const size_t tokens = std::max<size_t>(m->max_tokens_, std::min<size_t>(spec.max_batch_tokens, kCacheBytes / per_token));
  // A piece's sequences each round up to whole blocks.
  m->kv_blocks_ = BlocksFor(tokens) + std::min<uint32_t>(spec.max_batch_requests, BlocksFor(tokens));
  auto llama = Llama::Load(spec.path, *config, options.precision, static_cast<uint32_t>(m->max_tokens_), m->kv_blocks_,
                           kBlockTokens, /*with_head=*/false, ctx.progress);
  if (!llama.ok()) return llama.status();
  m->llama_ = std::move(llama).value();
  spdlog::info("native: {} is a {} decoder embedder: {} layers, {} attention, {} pooling, inputs up to {} tokens, "
               "scratch KV cache {} positions ({:.1f} MB)",
               spec.id, config->model_type, config->num_hidden_layers,
               config->bidirectional ? "bidirectional" : "causal", PoolingName(m->pooling_), m->max_tokens_,
               static_cast<size_t>(m->kv_blocks_) * kBlockTokens, m->llama_->kv_bytes() / 1e6);
  return std::unique_ptr<Model>(std::move(m));
}

Result<Encoding> DecoderEmbedder::Tokens(const EncodeInput& in) const {
  EncodeOptions limit;
  limit.add_special_tokens = true;
  limit.max_length = max_tokens_;
  limit.truncate = in.truncate;
  if (in.ids.empty()) return tokenizer_->Encode(in.text, limit);
  return EncodingOfIds(in.ids, llama_->config().vocab_size, limit);
}

Status DecoderEmbedder::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  std::vector<Encoding> encodings(in.size());
  const std::vector<size_t> ok = TokenizeAll(in, out, encodings, [&](const EncodeInput& x) -> Result<Encoding> {
    if (!x.lora.empty()) return InvalidInput("lora: model '" + config_.id + "' runs no LoRA adapters (a decoder embedder)");
    return Tokens(x);
  });
  const size_t H = llama_->config().hidden_size;
  std::lock_guard<std::mutex> lock(mu_);
  // Pieces that fit the cache: each sequence gets the next whole blocks.
  std::vector<int32_t> block_ids(kv_blocks_);
  for (uint32_t b = 0; b < kv_blocks_; ++b) block_ids[b] = static_cast<int32_t>(b);
  for (size_t begin = 0; begin < ok.size();) {
    std::vector<SequenceChunk> chunks;
    uint32_t used = 0;
    size_t end = begin;
    for (; end < ok.size(); ++end) {
      const std::vector<int32_t>& ids = encodings[ok[end]].ids;
      const uint32_t blocks = BlocksFor(ids.size());
      if (used + blocks > kv_blocks_) break;
      SequenceChunk c;
      c.tokens = ids;
      c.blocks = std::span<const int32_t>(block_ids).subspan(used, blocks);
      chunks.push_back(c);
      used += blocks;
    }
    if (chunks.empty()) return Internal("decoder embedder: an input does not fit the scratch KV cache");
    std::vector<float> vectors(chunks.size() * H);
    SHOAL_RETURN_IF_ERROR(llama_->PooledHiddenStates(chunks, pooling_, vectors.data(), threads_));
    for (size_t k = 0; k < chunks.size(); ++k) {
      const size_t i = ok[begin + k];
      float* v = vectors.data() + k * H;
      if (in[i].normalize) cpu::L2Normalize(v, H);
      out[i].dense.assign(v, v + H);
      out[i].status = Status::Ok();
      out[i].tokens = static_cast<uint32_t>(encodings[i].ids.size());
      out[i].truncated = encodings[i].truncated;
    }
    begin = end;
  }
  return Status::Ok();
}

Status DecoderEmbedder::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return RunTokenize(*tokenizer_, in, out);
}

}  // namespace shoal::native
