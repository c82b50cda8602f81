#include "runtime/native/decoder_model.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "runtime/native/kernels/cpu/decoder_kernels.h"
#include "runtime/native/kernels/cpu/few_rows_gemm.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/tokenize_task.h"

namespace shoal::native {
namespace {

constexpr uint32_t kDefaultMaxContext = 4096;
constexpr size_t kDefaultKvBytes = size_t{256} << 20;

// A message's content as a vision-language model's template reads it: a
// list of parts.
nlohmann::json ContentParts(const ChatTurn& msg) {
  nlohmann::json parts = nlohmann::json::array();
  if (msg.parts.empty()) {
    if (!msg.content.empty()) parts.push_back({{"type", "text"}, {"text", msg.content}});
    return parts;
  }
  for (const ChatPart& p : msg.parts) {
    parts.push_back(p.image ? nlohmann::json{{"type", "image"}} : nlohmann::json{{"type", "text"}, {"text", p.text}});
  }
  return parts;
}

}  // namespace

Result<std::unique_ptr<Model>> DecoderModel::Load(const ModelConfig& spec, const NativeOptions& options,
                                                  const LoadContext& ctx) {
  namespace fs = std::filesystem;
  if (spec.task != Task::kGenerate) {
    return InvalidInput(spec.path + ": a decoder-only model generates; register it with task: generate");
  }
  std::unique_ptr<DecoderModel> m(new DecoderModel());
  m->config_ = spec;
  auto config = LoadDecoderConfig(spec.path);
  if (!config.ok()) return config.status();
  if (config->bidirectional) {
    return InvalidInput(spec.path + ": config.json says this decoder attends bidirectionally (is_causal: false or "
                        "use_bidirectional_attention: true): it embeds and cannot generate; register it with "
                        "task: encode");
  }

  auto tokenizer = LoadModelTokenizer(spec.path);
  if (!tokenizer.ok()) return tokenizer.status();
  m->tokenizer_ = std::move(tokenizer).value();
  auto bytes = m->tokenizer_->OutputBytes();
  if (!bytes.ok()) return bytes.status();
  m->output_bytes_ = std::move(bytes).value();
  if (m->output_bytes_.size() > config->vocab_size) {
    return InvalidInput(spec.path + ": the tokenizer has " + std::to_string(m->output_bytes_.size()) +
                        " tokens, more than the model's vocab_size " + std::to_string(config->vocab_size));
  }
  m->output_bytes_.resize(config->vocab_size);  // padded embedding rows stand for nothing

  const fs::path tokenizer_config = fs::path(spec.path) / "tokenizer_config.json";
  std::error_code ec;
  if (fs::exists(tokenizer_config, ec)) {
    auto chat = LoadChatConfig(tokenizer_config.string());
    if (!chat.ok()) return chat.status();
    m->chat_ = std::move(chat).value();
  }

  GeneratorInfo& info = m->info_;
  info.vocab_size = config->vocab_size;
  info.max_context = options.max_context > 0 ? std::min(options.max_context, config->max_position_embeddings)
                                             : std::min(kDefaultMaxContext, config->max_position_embeddings);
  info.kv_block_tokens = options.kv_block_tokens;
  info.eos_ids = config->eos_token_ids;
  info.sampling_defaults = config->sampling_defaults;
  info.flat_cost_rows = static_cast<uint32_t>(cpu::kFewRows);  // few_rows_gemm.h
  if (info.eos_ids.empty() && !m->chat_.eos_token.empty()) {
    if (auto id = m->tokenizer_->TokenToId(m->chat_.eos_token)) info.eos_ids.push_back(*id);
  }
  // The cache: as asked, else room for a full batch of full sequences
  // within the default byte budget; never less than one full sequence.
  const size_t per_token = static_cast<size_t>(config->num_hidden_layers) * 2 *
                           config->num_key_value_heads * config->head_dim * sizeof(float);
  size_t tokens = options.kv_cache_tokens;
  if (tokens == 0) {
    tokens = std::min<size_t>(static_cast<size_t>(spec.max_batch_requests) * info.max_context,
                              kDefaultKvBytes / per_token);
  }
  tokens = std::max<size_t>(tokens, info.max_context);
  info.kv_blocks = static_cast<uint32_t>((tokens + info.kv_block_tokens - 1) / info.kv_block_tokens);

  auto llama = Llama::Load(spec.path, *config, options.precision, info.max_context, info.kv_blocks,
                           info.kv_block_tokens, /*with_head=*/true, ctx.progress);
  if (!llama.ok()) return llama.status();
  m->llama_ = std::move(llama).value();
  m->loras_ = std::make_unique<LoraRegistry>(m->llama_->lora_targets(), options.lora_budget_bytes);
  if (config->vision_language) {
    SHOAL_ASSIGN_OR_RETURN(const nlohmann::json json, ReadJsonFile((fs::path(spec.path) / "config.json").string()));
    SHOAL_ASSIGN_OR_RETURN(m->images_,
                           ImagePromptEncoder::Load(spec.path, json, config->hidden_size, options.precision));
    if (static_cast<size_t>(m->images_->image_token()) >= info.vocab_size) {
      return InvalidInput(spec.path + ": config.json's image token " + std::to_string(m->images_->image_token()) +
                          " is not in the vocabulary of " + std::to_string(info.vocab_size));
    }
    info.image_token = m->images_->image_token();
    info.image_positions = m->images_->positions();
    spdlog::info("native: {} reads images: {} positions each", spec.id, info.image_positions);
  }
  spdlog::info("native: {} is a {} generator: {} layers, context {}, KV cache {} positions ({:.1f} MB)", spec.id,
               config->model_type, config->num_hidden_layers, info.max_context,
               static_cast<size_t>(info.kv_blocks) * info.kv_block_tokens, m->llama_->kv_bytes() / 1e6);
  return std::unique_ptr<Model>(std::move(m));
}

size_t DecoderModel::memory_bytes() const {
  return llama_->weight_bytes() + llama_->kv_bytes() + (images_ ? images_->memory_bytes() : 0);
}

Result<std::vector<float>> DecoderModel::EmbedImage(std::string_view encoded, int threads) {
  if (!images_) return InvalidInput("model '" + config_.id + "' reads no images");
  return images_->Embed(encoded, threads);
}

Result<std::vector<int32_t>> DecoderModel::EncodePrompt(std::string_view text, bool add_special_tokens) const {
  EncodeOptions o;
  o.add_special_tokens = add_special_tokens;
  auto e = tokenizer_->Encode(text, o);
  if (!e.ok()) return e.status();
  return std::move(e->ids);
}

std::unique_ptr<Sampler> DecoderModel::NewSampler(const SamplingConfig& config, uint64_t seed) const {
  return std::make_unique<Sampler>(config, seed, &cpu::ArgMax);
}

Result<std::string> DecoderModel::RenderChat(std::span<const ChatTurn> messages,
                                             bool add_generation_prompt, std::string_view kwargs_json) const {
  if (!chat_.chat_template) {
    return InvalidInput("model '" + config_.id + "' has no chat template (tokenizer_config.json chat_template); "
                        "use a completion prompt");
  }
  nlohmann::json vars = nlohmann::json::object();
  if (!kwargs_json.empty()) {
    vars = nlohmann::json::parse(kwargs_json, nullptr, /*allow_exceptions=*/false);
    if (!vars.is_object()) return InvalidInput("chat_template_kwargs: expected a JSON object");
  }
  nlohmann::json list = nlohmann::json::array();
  for (const ChatTurn& msg : messages) {
    nlohmann::json m = {{"role", msg.role}, {"content", msg.content}};
    if (images_) m["content"] = ContentParts(msg);
    if (!msg.tool_calls_json.empty()) {
      m["tool_calls"] = nlohmann::json::parse(msg.tool_calls_json, nullptr, /*allow_exceptions=*/false);
      if (!m["tool_calls"].is_array()) return InvalidInput("tool_calls: expected a JSON array");
    }
    if (!msg.tool_call_id.empty()) m["tool_call_id"] = msg.tool_call_id;
    list.push_back(std::move(m));
  }
  vars["messages"] = std::move(list);
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["bos_token"] = chat_.bos_token;
  vars["eos_token"] = chat_.eos_token;
  return chat_.chat_template->Render(vars);
}

std::string DecoderModel::TokenBytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= output_bytes_.size()) return {};
  return output_bytes_[id];
}

Status DecoderModel::UpdateLoras(std::span<const LoraConfig> loras) {
  loras_->Update(loras);
  return Status::Ok();
}

Status DecoderModel::Forward(std::span<const SequenceChunk> chunks, float* logits, int threads) {
  // Each chunk's adapter, held for the step (an eviction meanwhile frees
  // nothing in use).
  std::vector<std::shared_ptr<const LoraAdapter>> held;
  std::vector<const LoraAdapter*> adapters;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (chunks[c].lora.empty()) continue;
    if (adapters.empty()) adapters.assign(chunks.size(), nullptr);
    SHOAL_ASSIGN_OR_RETURN(auto a, loras_->Get(chunks[c].lora));
    adapters[c] = a.get();
    held.push_back(std::move(a));
  }
  return llama_->Step(chunks, adapters, logits, threads);
}

Status DecoderModel::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return RunTokenize(*tokenizer_, in, out);
}

}  // namespace shoal::native
