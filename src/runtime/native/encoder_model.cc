#include "runtime/native/encoder_model.h"

#include "runtime/extraction.h"
#include "runtime/native/models/cpu_encoder.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
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
  if (options.cuda_device >= 0 && config->cpu_only_family()) {
    return InvalidInput("native.device: " + spec.id + " is a " + config->cpu_only_family() +
                        "; it runs on the CPU backend so far");
  }
  auto pooling = LoadPoolingConfig(spec.path);
  if (!pooling.ok()) return pooling.status();
  m->pooling_ = options.pooling.value_or(pooling->pooling);
  if (options.cuda_device >= 0 && m->pooling_ == Pooling::kLastToken) {
    return InvalidInput("native.device: " + spec.id + " pools the last token; that runs on the CPU backend so far");
  }
  if (options.cuda_device >= 0 && (pooling->splade || pooling->colbert || pooling->bge_m3)) {
    return InvalidInput("native.device: " + spec.id +
                        " has sparse or multi-vector output; those run on the CPU backend so far");
  }
  if ((pooling->splade || pooling->colbert) && spec.task != Task::kEncode) {
    return InvalidInput(spec.path + ": a SPLADE or ColBERT model encodes; register it with task: encode");
  }

  auto tokenizer = LoadModelTokenizer(spec.path);
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
  SHOAL_RETURN_IF_ERROR(m->LoadHeads(*pooling, options));
  if (const LoraTargets* targets = m->network_->lora_targets()) {
    m->loras_ = std::make_unique<LoraRegistry>(*targets, options.lora_budget_bytes);
  }
  return std::unique_ptr<Model>(std::move(m));
}

Status EncoderModel::LoadHeads(const PoolingConfig& pooling, const NativeOptions& options) {
  const EncoderConfig& c = network_->config();
  // SPLADE reads a BERT-family or ModernBERT masked-LM head and bge-m3 is
  // an XLM-R; a ColBERT projection takes any body's token states.
  if (pooling.splade && c.non_bert_family() && !c.is_modernbert()) {
    return InvalidInput(config_.path + ": SPLADE runs on BERT-family and ModernBERT encoders so far, not " +
                        c.non_bert_family());
  }
  if (pooling.bge_m3 && c.non_bert_family()) {
    return InvalidInput(config_.path + ": bge-m3's heads run on BERT-family encoders (an XLM-R) so far, not " +
                        c.non_bert_family());
  }
  if (pooling.bge_m3 && (pooling.splade || pooling.colbert)) {
    return InvalidInput(config_.path + ": bge-m3's head files beside SPLADE or PyLate modules: which output is meant?");
  }
  if (pooling.bge_m3) {
    // bge-m3: the pooled vector, and the heads whose files are there.
    const BgeM3Config& m3 = *pooling.bge_m3;
    if (!m3.sparse_linear.empty()) {
      // FlagEmbedding leaves out the tokenizer's cls, eos, pad and unk tokens.
      std::vector<int32_t> skipped;
      for (const char* special : {"<s>", "</s>", "<pad>", "[CLS]", "[SEP]", "[PAD]"}) {
        if (auto id = tokenizer_->TokenToId(special)) skipped.push_back(*id);
      }
      if (auto unk = tokenizer_->unk_id()) skipped.push_back(*unk);
      SHOAL_ASSIGN_OR_RETURN(lexical_,
                             LexicalWeightsHead::LoadTorch(m3.sparse_linear, c.hidden_size, std::move(skipped)));
      outputs_ |= static_cast<OutputKinds>(OutputKind::kSparse);
    }
    if (!m3.colbert_linear.empty()) {
      SHOAL_ASSIGN_OR_RETURN(colbert_, ColbertHead::LoadTorch(m3.colbert_linear, c.hidden_size, options.precision));
      outputs_ |= static_cast<OutputKinds>(OutputKind::kMultivector);
    }
  }
  if (pooling.splade) {
    SHOAL_ASSIGN_OR_RETURN(splade_, SpladeHead::Load(config_.path, c, *pooling.splade, options.precision));
    outputs_ = static_cast<OutputKinds>(OutputKind::kSparse);
  }
  if (pooling.colbert) {
    SHOAL_ASSIGN_OR_RETURN(colbert_, ColbertHead::Load(pooling.colbert->dense_dir, c.hidden_size, options.precision));
    auto t = std::make_unique<ColbertTokens>();
    t->config = *pooling.colbert;
    auto token = [&](const std::string& field, const std::string& text) -> Result<int32_t> {
      if (auto id = tokenizer_->TokenToId(text)) return *id;
      return InvalidInput(config_.path + ": " + field + " '" + text + "' is not a token of the tokenizer");
    };
    SHOAL_ASSIGN_OR_RETURN(t->query_marker, token("query_prefix", t->config.query_prefix));
    SHOAL_ASSIGN_OR_RETURN(t->document_marker, token("document_prefix", t->config.document_prefix));
    if (t->config.query_expansion) {
      auto mask = tokenizer_->TokenToId("[MASK]");
      if (!mask) mask = tokenizer_->TokenToId("<mask>");
      if (!mask) return InvalidInput(config_.path + ": query expansion needs a mask token ([MASK] or <mask>)");
      t->mask = *mask;
    }
    // PyLate's skiplist: the ids of the words; one not in the vocabulary skips nothing.
    for (const std::string& word : t->config.skiplist_words) {
      if (auto id = tokenizer_->TokenToId(word)) t->skiplist.push_back(*id);
    }
    std::sort(t->skiplist.begin(), t->skiplist.end());
    colbert_tokens_ = std::move(t);
    outputs_ = static_cast<OutputKinds>(OutputKind::kMultivector);
  }
  return Status::Ok();
}

size_t EncoderModel::memory_bytes() const {
  return network_->memory_bytes() + (splade_ ? splade_->memory_bytes() : 0) +
         (colbert_ ? colbert_->memory_bytes() : 0) + (lexical_ ? lexical_->memory_bytes() : 0);
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
// `attend[i]`: item i's attend count (TokenSequence), when not empty.
template <class Out, class Forward>
Status RunTokenized(std::vector<Encoding>& encodings, const std::vector<size_t>& ok,
                    const std::vector<std::shared_ptr<const LoraAdapter>>& adapters, std::span<Out> out,
                    Forward&& forward, const std::vector<uint32_t>& attend = {}) {
  if (ok.empty()) return Status::Ok();
  std::vector<TokenSequence> seqs;
  seqs.reserve(ok.size());
  for (size_t i : ok) {
    seqs.push_back({encodings[i].ids, encodings[i].type_ids, adapters.empty() ? nullptr : adapters[i].get(),
                    attend.empty() ? 0 : attend[i]});
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
    return InvalidInput("model '" + config_.id +
                        "' runs no LoRA adapters: they run on the CPU backend only, and not on every "
                        "architecture yet");
  }
  if (loras_ == nullptr) return Status::Ok();
  loras_->Update(loras);
  return Status::Ok();
}

Status EncoderModel::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  if (config_.task != Task::kEncode) return Model::Encode(in, out);
  if (splade_ || colbert_ || lexical_) return EncodeWithHeads(in, out);
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

Result<Encoding> EncoderModel::ColbertEncoding(const EncodeInput& x, uint32_t* attend) const {
  const ColbertTokens& t = *colbert_tokens_;
  if (x.role == InputRole::kUnspecified) {
    return InvalidInput("input_type: model '" + config_.id +
                        "' (ColBERT) encodes queries and documents differently; say \"query\" or \"document\"");
  }
  if (!x.ids.empty()) {
    return InvalidInput("input: model '" + config_.id + "' (ColBERT) takes text, to which it adds its markers");
  }
  const bool query = x.role == InputRole::kQuery;
  const size_t length = std::min<size_t>(max_tokens_, query ? t.config.query_length : t.config.document_length);
  // The text is held to the length less the marker's place.
  EncodeOptions limit = LimitFor(x.truncate);
  limit.max_length = length - 1;
  SHOAL_ASSIGN_OR_RETURN(Encoding e, tokenizer_->Encode(x.text, limit));
  e.ids.insert(e.ids.begin() + 1, query ? t.query_marker : t.document_marker);
  e.type_ids.insert(e.type_ids.begin() + 1, 0);
  e.offsets.insert(e.offsets.begin() + 1, {0, 0});
  e.special.insert(e.special.begin() + 1, 1);
  *attend = 0;
  if (query && t.config.query_expansion && e.ids.size() < length) {
    if (!t.config.attend_to_expansion) *attend = static_cast<uint32_t>(e.ids.size());
    const size_t pad = length - e.ids.size();
    e.ids.insert(e.ids.end(), pad, t.mask);
    e.type_ids.insert(e.type_ids.end(), pad, 0);
    e.offsets.insert(e.offsets.end(), pad, {0, 0});
    e.special.insert(e.special.end(), pad, 1);
  }
  return e;
}

Status EncoderModel::EncodeWithHeads(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  std::vector<Encoding> encodings(in.size());
  std::vector<uint32_t> attend(in.size(), 0);
  std::vector<size_t> ok = TokenizeAll(in, out, encodings, [&](const EncodeInput& x) -> Result<Encoding> {
    if ((x.outputs & ~outputs_) != 0) {
      return InvalidInput("output: model '" + config_.id + "' produces " + OutputKindsText(outputs_));
    }
    if (!Has(x.outputs, OutputKind::kSparse) && (x.sparse_top_k != 0 || x.sparse_tokens)) {
      return InvalidInput(std::string(x.sparse_top_k != 0 ? "sparse_top_k" : "sparse_tokens") +
                          ": applies to sparse output, which this input does not ask for");
    }
    // ColBERT's marker and expansion; TokenizeAll passes in[i] itself.
    if (colbert_tokens_) return ColbertEncoding(x, &attend[&x - in.data()]);
    if (x.ids.empty()) return tokenizer_->Encode(x.text, LimitFor(x.truncate));
    return EncodingOfIds(x.ids, network_->config().vocab_size, LimitFor(x.truncate));
  });
  const auto adapters = ResolveLoras(loras_.get(), config_, in, out, &ok);
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  SHOAL_RETURN_IF_ERROR(RunTokenized(
      encodings, ok, adapters, out,
      [&](std::span<const TokenSequence> seqs) { return network_->HiddenStates(seqs, &hidden, &offsets, threads_); },
      attend));
  if (ok.empty()) return Status::Ok();
  OutputKinds asked = 0;
  for (size_t i : ok) asked |= in[i].outputs;
  const size_t H = network_->config().hidden_size;
  if (Has(asked, OutputKind::kDense)) {
    std::vector<float> pooled(ok.size() * H);
    PoolSequences(hidden.data(), H, offsets, pooling_, /*normalize=*/false, pooled.data());
    for (size_t k = 0; k < ok.size(); ++k) {
      if (!Has(in[ok[k]].outputs, OutputKind::kDense)) continue;
      std::vector<float>& v = out[ok[k]].dense;
      v.assign(pooled.begin() + k * H, pooled.begin() + (k + 1) * H);
      if (in[ok[k]].normalize) cpu::L2Normalize(v.data(), H);
    }
  }
  if (Has(asked, OutputKind::kSparse)) SparseOutputs(in, encodings, ok, hidden, offsets, out);
  if (Has(asked, OutputKind::kMultivector)) MultivectorOutputs(in, encodings, ok, hidden, offsets, out);
  return Status::Ok();
}

void EncoderModel::SparseOutputs(std::span<const EncodeInput> in, const std::vector<Encoding>& encodings,
                                 const std::vector<size_t>& ok, const std::vector<float>& hidden,
                                 const std::vector<uint32_t>& offsets, std::span<EncodeOutput> out) const {
  // SPLADE: a weight per vocabulary entry, pooled; bge-m3: a weight per
  // token, the largest per id.
  std::vector<float> weights(splade_ ? ok.size() * splade_->vocab_size() : offsets.back());
  if (splade_) {
    splade_->Run(hidden.data(), offsets, weights.data(), threads_);
  } else {
    lexical_->Run(hidden.data(), offsets.back(), weights.data());
  }
  for (size_t k = 0; k < ok.size(); ++k) {
    const EncodeInput& x = in[ok[k]];
    if (!Has(x.outputs, OutputKind::kSparse)) continue;
    SparseVector& sv = out[ok[k]].sparse;
    if (splade_) {
      const size_t V = splade_->vocab_size();
      SparseEntries({weights.data() + k * V, V}, x.sparse_top_k, &sv.indices, &sv.values);
    } else {
      lexical_->Entries(encodings[ok[k]].ids, weights.data() + offsets[k], x.sparse_top_k, &sv.indices, &sv.values);
    }
    if (x.sparse_tokens) {
      for (uint32_t id : sv.indices) sv.tokens.push_back(tokenizer_->IdToToken(static_cast<int32_t>(id)));
    }
  }
}

void EncoderModel::MultivectorOutputs(std::span<const EncodeInput> in, const std::vector<Encoding>& encodings,
                                      const std::vector<size_t>& ok, const std::vector<float>& hidden,
                                      const std::vector<uint32_t>& offsets, std::span<EncodeOutput> out) const {
  const size_t D = colbert_->dim();
  std::vector<float> vectors(offsets.back() * D);
  colbert_->Run(hidden.data(), offsets.back(), vectors.data(), threads_);
  for (size_t k = 0; k < ok.size(); ++k) {
    const size_t i = ok[k];
    if (!Has(in[i].outputs, OutputKind::kMultivector)) continue;
    MultiVector& mv = out[i].multivector;
    mv.dim = static_cast<uint32_t>(D);
    const auto& ids = encodings[i].ids;
    // PyLate: a query keeps every row (its expansion too), a document drops
    // the skiplist's. bge-m3: every row but the first ([CLS]).
    const bool pylate = colbert_tokens_ != nullptr;
    const bool query = in[i].role == InputRole::kQuery;
    for (size_t j = pylate ? 0 : 1; j < ids.size(); ++j) {
      if (pylate && !query &&
          std::binary_search(colbert_tokens_->skiplist.begin(), colbert_tokens_->skiplist.end(), ids[j])) {
        continue;
      }
      const float* v = vectors.data() + (offsets[k] + j) * D;
      mv.values.insert(mv.values.end(), v, v + D);
    }
  }
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
