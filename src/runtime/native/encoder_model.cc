#include "runtime/native/encoder_model.h"

#include "runtime/extraction.h"
#include "runtime/native/models/cpu_encoder.h"
#include "runtime/native/tokenizers/tokenize_task.h"
#if SHOAL_WITH_CUDA
#include "runtime/native/models/bert_cuda.h"
#endif

#include <algorithm>
#include <filesystem>

namespace shoal::native {

Result<std::unique_ptr<Model>> EncoderModel::Load(const ModelConfig& spec, const NativeOptions& options,
                                                  const LoadContext& ctx) {
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  m->config_ = spec;
  m->threads_ = std::max(1, ctx.threads);
  auto config = LoadEncoderConfig(spec.path);
  if (!config.ok()) return config.status();
  if (spec.task == Task::kScore && !config->sequence_classifier()) {
    return InvalidInput(spec.path + ": task score needs a cross-encoder (a *ForSequenceClassification "
                        "architecture in config.json)");
  }
  if (spec.task == Task::kScore && config->num_labels != 1) {
    return InvalidInput(spec.path + ": a reranker has one label; this classifier has " +
                        std::to_string(config->num_labels));
  }
  if (spec.task == Task::kExtract && !config->sequence_classifier() && !config->token_classifier()) {
    return InvalidInput(spec.path + ": task extract needs a classifier (a *ForTokenClassification or "
                        "*ForSequenceClassification architecture in config.json)");
  }
  if (spec.task == Task::kEncode && config->sequence_classifier()) {
    return InvalidInput(spec.path + ": this is a cross-encoder; register it with task: score");
  }
  if (spec.task == Task::kEncode && config->token_classifier()) {
    return InvalidInput(spec.path + ": this is a token classifier; register it with task: extract");
  }
  if (options.cuda_device >= 0 && config->token_classifier()) {
    return InvalidInput("native.device: " + spec.id + " is a token classifier; those run on the CPU backend "
                        "so far");
  }
  if (options.cuda_device >= 0 && config->is_modernbert()) {
    return InvalidInput("native.device: " + spec.id + " is a ModernBERT; it runs on the CPU backend so far");
  }
  auto pooling = LoadPoolingConfig(spec.path);
  if (!pooling.ok()) return pooling.status();
  m->pooling_ = options.pooling.value_or(pooling->pooling);
  if (options.cuda_device >= 0 && m->pooling_ == Pooling::kLastToken) {
    return InvalidInput("native.device: " + spec.id + " pools the last token; that runs on the CPU backend so far");
  }

  const std::string tokenizer_path = (std::filesystem::path(spec.path) / "tokenizer.json").string();
  auto tokenizer = Tokenizer::LoadFile(tokenizer_path);
  if (!tokenizer.ok()) return tokenizer.status();
  m->tokenizer_ = std::move(tokenizer).value();

  if (options.cuda_device >= 0) {
#if SHOAL_WITH_CUDA
    auto network = CudaBert::Load(spec.path, *config, options.cuda_device, spec.max_batch_tokens,
                                  ctx.progress);
    if (!network.ok()) return network.status();
    m->network_ = std::move(network).value();
#else
    return InvalidInput("native.device: " + spec.id + " asks for a GPU, and this shoal was built without CUDA "
                        "(cmake -DSHOAL_CUDA=ON)");
#endif
  } else {
    auto network = LoadCpuEncoder(spec.path, *config, options.precision, ctx.progress);
    if (!network.ok()) return network.status();
    m->network_ = std::move(network).value();
  }
  m->max_tokens_ = std::min<size_t>(spec.max_input_tokens, config->max_tokens());
  if (const LoraTargets* targets = m->network_->lora_targets()) {
    m->loras_ = std::make_unique<LoraRegistry>(*targets, options.lora_budget_bytes);
  }
  return std::unique_ptr<Model>(std::move(m));
}

EncodeOptions EncoderModel::LimitFor(bool truncate) const {
  EncodeOptions o;
  o.add_special_tokens = true;
  o.max_length = max_tokens_;
  o.truncate = truncate;
  return o;
}

namespace {

// Runs `forward` on the items that tokenized; the others already hold their
// error. `adapters[i]`: item i's LoRA adapter, or null (all null when
// `adapters` is empty). Returns the forward pass's status.
template <class Out, class Forward>
Status RunTokenized(std::vector<Encoding>& encodings, const std::vector<size_t>& ok,
                    const std::vector<std::shared_ptr<const LoraAdapter>>& adapters, std::span<Out> out,
                    Forward&& forward) {
  if (ok.empty()) return Status::Ok();
  std::vector<TokenSequence> seqs;
  seqs.reserve(ok.size());
  for (size_t i : ok) {
    seqs.push_back({encodings[i].ids, encodings[i].type_ids, adapters.empty() ? nullptr : adapters[i].get()});
  }
  SHOAL_RETURN_IF_ERROR(forward(std::span<const TokenSequence>(seqs)));
  for (size_t i : ok) {
    out[i].status = Status::Ok();
    out[i].tokens = static_cast<uint32_t>(encodings[i].ids.size());
    out[i].truncated = encodings[i].truncated;
  }
  return Status::Ok();
}

// Finds each tokenized item's adapter (loading it on first use); an item
// whose adapter is unknown or does not load gets that error and leaves `ok`.
// The items are then ordered by adapter, so each adapter's rows run as one
// segment. Empty when no item names an adapter (nothing to find or order).
template <class In, class Out>
std::vector<std::shared_ptr<const LoraAdapter>> ResolveLoras(LoraRegistry* loras, const ModelConfig& spec,
                                                             std::span<const In> in, std::span<Out> out,
                                                             std::vector<size_t>* ok) {
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
  if (std::none_of(ok->begin(), ok->end(), [&](size_t i) { return !in[i].lora.empty(); })) return adapters;
  adapters.resize(in.size());
  std::vector<size_t> kept;
  for (size_t i : *ok) {
    if (!in[i].lora.empty()) {
      auto a = loras ? loras->Get(in[i].lora)
                     : Result<std::shared_ptr<const LoraAdapter>>(Status(
                           Code::kModelNotFound, "model '" + spec.id + "' runs no LoRA adapters on its device"));
      if (!a.ok()) {
        out[i].status = a.status();
        continue;
      }
      adapters[i] = std::move(a).value();
    }
    kept.push_back(i);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](size_t a, size_t b) { return adapters[a] < adapters[b]; });
  *ok = std::move(kept);
  return adapters;
}

}  // namespace

Status EncoderModel::UpdateLoras(std::span<const LoraConfig> loras) {
  if (loras_ == nullptr && !loras.empty()) {
    return InvalidInput("model '" + config_.id + "' runs on a GPU; LoRA adapters run on the CPU backend only, so far");
  }
  if (loras_ == nullptr) return Status::Ok();
  loras_->Update(loras);
  return Status::Ok();
}

Status EncoderModel::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  if (config_.task != Task::kEncode) return Model::Encode(in, out);
  std::vector<Encoding> encodings(in.size());
  std::vector<size_t> ok = TokenizeAll(in, out, encodings, [&](const EncodeInput& x) {
    if (x.ids.empty()) return tokenizer_->Encode(x.text, LimitFor(x.truncate));
    return EncodingOfIds(x.ids, network_->config().vocab_size, LimitFor(x.truncate));
  });
  const auto adapters = ResolveLoras(loras_.get(), config_, in, out, &ok);
  // Requests choose normalization per item; group by it so each group is
  // one pass (in practice a batch is all one or the other).
  for (bool normalize : {true, false}) {
    std::vector<size_t> group;
    for (size_t i : ok) {
      if (in[i].normalize == normalize) group.push_back(i);
    }
    const size_t H = network_->config().hidden_size;
    std::vector<float> vectors(group.size() * H);
    SHOAL_RETURN_IF_ERROR(RunTokenized(encodings, group, adapters, out, [&](std::span<const TokenSequence> seqs) {
      return network_->Embed(seqs, pooling_, normalize, vectors.data(), threads_);
    }));
    for (size_t k = 0; k < group.size(); ++k) {
      out[group[k]].dense.assign(vectors.begin() + k * H, vectors.begin() + (k + 1) * H);
    }
  }
  return Status::Ok();
}

Status EncoderModel::Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) {
  if (config_.task != Task::kScore) return Model::Score(in, out);
  std::vector<Encoding> encodings(in.size());
  std::vector<size_t> ok = TokenizeAll(in, out, encodings, [&](const ScoreInput& x) {
    return tokenizer_->EncodePair(x.text, x.text_pair, LimitFor(x.truncate));
  });
  const auto adapters = ResolveLoras(loras_.get(), config_, in, out, &ok);
  const size_t labels = network_->config().num_labels;
  std::vector<float> logits(ok.size() * labels);
  SHOAL_RETURN_IF_ERROR(RunTokenized(encodings, ok, adapters, out, [&](std::span<const TokenSequence> seqs) {
    return network_->Classify(seqs, logits.data(), threads_);
  }));
  for (size_t k = 0; k < ok.size(); ++k) {
    out[ok[k]].logits.assign(logits.begin() + k * labels, logits.begin() + (k + 1) * labels);
  }
  return Status::Ok();
}

Status EncoderModel::Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) {
  if (config_.task != Task::kExtract) return Model::Extract(in, out);
  const EncoderConfig& c = network_->config();
  const bool tokens = c.token_classifier();
  std::vector<Encoding> encodings(in.size());
  std::vector<size_t> ok = TokenizeAll(in, out, encodings, [&](const ExtractInput& x) -> Result<Encoding> {
    if (tokens && x.top_k != 0) {
      return InvalidInput("top_k: model '" + config_.id + "' labels tokens (entities), not whole texts");
    }
    if (!tokens && x.aggregation) {
      return InvalidInput("aggregation: model '" + config_.id + "' labels whole texts, not tokens");
    }
    return tokenizer_->Encode(x.text, LimitFor(x.truncate));
  });
  const auto adapters = ResolveLoras(loras_.get(), config_, in, out, &ok);
  const size_t L = c.num_labels;
  if (!tokens) {
    std::vector<float> logits(ok.size() * L);
    SHOAL_RETURN_IF_ERROR(RunTokenized(encodings, ok, adapters, out, [&](std::span<const TokenSequence> seqs) {
      return network_->Classify(seqs, logits.data(), threads_);
    }));
    for (size_t k = 0; k < ok.size(); ++k) {
      out[ok[k]].labels = RankLabels({logits.data() + k * L, L}, c.labels, c.multi_label, in[ok[k]].top_k);
    }
    return Status::Ok();
  }
  size_t rows = 0;
  for (size_t i : ok) rows += encodings[i].ids.size();
  std::vector<float> logits(rows * L);
  SHOAL_RETURN_IF_ERROR(RunTokenized(encodings, ok, adapters, out, [&](std::span<const TokenSequence> seqs) {
    return network_->ClassifyTokens(seqs, logits.data(), threads_);
  }));
  const bool word_aware = !tokenizer_->continuing_subword_prefix().empty();
  const std::optional<int32_t> unk = tokenizer_->unk_id();
  float* row = logits.data();
  std::vector<ScoredToken> scored;
  for (size_t i : ok) {
    const Encoding& e = encodings[i];
    scored.clear();
    for (size_t j = 0; j < e.ids.size(); ++j, row += L) {
      if (e.special[j]) continue;
      Softmax({row, L});
      auto [start, end] = e.offsets[j];
      WidenToCharacters(in[i].text, &start, &end);
      scored.push_back({{row, L}, start, end,
                        IsSubword(in[i].text, start, end, tokenizer_->IdToToken(e.ids[j]), word_aware, e.ids[j] == unk)});
    }
    out[i].entities = GroupEntities(in[i].text, scored, c.labels, in[i].aggregation.value_or(Aggregation::kSimple));
  }
  return Status::Ok();
}

Status EncoderModel::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return RunTokenize(*tokenizer_, in, out);
}

}  // namespace shoal::native
