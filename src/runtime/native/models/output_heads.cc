#include "runtime/native/models/output_heads.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "runtime/native/loaders/torch_state_dict.h"
#include "runtime/native/loaders/weight_reader.h"
#include "runtime/native/models/encoder_network.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

// Rows of logits per decoder GEMM: bounds the scratch at rows × vocabulary.
constexpr size_t kSpladeChunkRows = 256;

// The MLM head's tensor names in one family's checkpoint.
struct MlmNames {
  std::string dense, norm, decoder, bias;
};

}  // namespace

Result<std::unique_ptr<SpladeHead>> SpladeHead::Load(const std::string& dir, const EncoderConfig& config,
                                                     const SpladeConfig& splade, cpu::Precision precision) {
  std::unique_ptr<SpladeHead> h(new SpladeHead());
  SHOAL_ASSIGN_OR_RETURN(h->weights_, SafeTensors::OpenDir(dir));
  const SafeTensors& w = *h->weights_;
  const size_t H = config.hidden_size, V = config.vocab_size;
  h->hidden_ = H;
  h->vocab_ = V;
  h->sum_ = splade.sum;
  h->eps_ = config.layer_norm_eps;
  // BERT's head and DistilBERT's apply the config's activation; RoBERTa's
  // lm_head, GELU; ModernBERT's, its classifier_activation (and its norm
  // has a bias only with norm_bias).
  MlmNames names;
  if (w.Find("cls.predictions.transform.dense.weight")) {
    names = {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
             "cls.predictions.bias"};
    h->act_ = ActivationOf(config.hidden_act);
  } else if (w.Find("lm_head.dense.weight")) {
    names = {"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"};
    h->act_ = cpu::Activation::kGelu;
  } else if (w.Find("vocab_transform.weight")) {
    names = {"vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"};
    h->act_ = ActivationOf(config.hidden_act);
  } else if (config.is_modernbert() && w.Find("head.dense.weight")) {
    names = {"head.dense", "head.norm", "decoder", "decoder.bias"};
    h->act_ = ActivationOf(config.modernbert.classifier_act);
  } else {
    return InvalidInput(dir + ": SPLADE needs a masked-language-model head (BERT's cls.predictions.*, RoBERTa's "
                        "lm_head.*, DistilBERT's vocab_transform/vocab_projector or ModernBERT's head/decoder), and "
                        "the checkpoint has none");
  }
  WeightReader r(w, &h->converted_, precision);
  SHOAL_ASSIGN_OR_RETURN(h->transform_, r.Linear({names.dense}, {H}, H));
  SHOAL_ASSIGN_OR_RETURN(h->ln_gamma_, r.Tensor(names.norm + ".weight", {static_cast<int64_t>(H)}));
  if (!config.is_modernbert() || config.modernbert.norm_bias) {
    SHOAL_ASSIGN_OR_RETURN(h->ln_beta_, r.Tensor(names.norm + ".bias", {static_cast<int64_t>(H)}));
  }
  if (w.Find(names.decoder + ".weight") && w.Find(names.decoder + ".bias")) {
    SHOAL_ASSIGN_OR_RETURN(h->decoder_, r.Linear({names.decoder}, {V}, H));
  } else {
    // Tied: the word embeddings, [vocabulary][hidden] as nn.Linear's [out][in].
    const std::string table = WordEmbeddingsName(config, w);
    const std::string weight_name = w.Find(names.decoder + ".weight") ? names.decoder + ".weight" : table;
    // Converted copies (f16/bf16 checkpoints) are dropped once the Linear has its own.
    std::vector<std::vector<float>> scratch;
    WeightReader decoder(w, &scratch, precision);
    SHOAL_ASSIGN_OR_RETURN(const float* weight,
                           decoder.Tensor(weight_name, {static_cast<int64_t>(V), static_cast<int64_t>(H)}));
    const std::string bias_name = w.Find(names.decoder + ".bias") ? names.decoder + ".bias" : names.bias;
    SHOAL_ASSIGN_OR_RETURN(const float* bias, decoder.Tensor(bias_name, {static_cast<int64_t>(V)}));
    SHOAL_ASSIGN_OR_RETURN(h->decoder_, cpu::Linear::Create(weight, cpu::WeightLayout::kOutIn, H, V, bias, precision));
  }
  return h;
}

size_t SpladeHead::memory_bytes() const {
  size_t converted = 0;
  for (const auto& c : converted_) converted += c.size() * sizeof(float);
  return transform_->memory_bytes() + decoder_->memory_bytes() + converted;
}

void SpladeHead::Run(const float* hidden, std::span<const uint32_t> offsets, float* out, int threads) const {
  const size_t H = hidden_, V = vocab_;
  const size_t nseq = offsets.size() - 1;
  const size_t T = offsets.back();
  // max: the running max of the logits (log(1 + ReLU) is monotonic, so it
  // is applied once at the end); sum: the running sum of log(1 + ReLU).
  std::fill(out, out + nseq * V, sum_ ? 0.0f : -INFINITY);
  const size_t chunk = std::min(T, kSpladeChunkRows);
  std::vector<float> transformed(chunk * H), logits(chunk * V);
  size_t s = 0;  // the sequence of row r0
  for (size_t r0 = 0; r0 < T; r0 += chunk) {
    const size_t rows = std::min(chunk, T - r0);
    transform_->Forward(hidden + r0 * H, rows, transformed.data(), act_, threads);
    cpu::LayerNorm(transformed.data(), nullptr, rows, H, ln_gamma_, ln_beta_, eps_, threads);
    decoder_->Forward(transformed.data(), rows, logits.data(), cpu::Activation::kNone, threads);
    for (size_t k = 0; k < rows; ++k) {
      while (r0 + k >= offsets[s + 1]) ++s;
      const float* row = logits.data() + k * V;
      float* acc = out + s * V;
      if (sum_) {
        for (size_t v = 0; v < V; ++v) {
          if (row[v] > 0.0f) acc[v] += std::log1p(row[v]);
        }
      } else {
        for (size_t v = 0; v < V; ++v) acc[v] = std::max(acc[v], row[v]);
      }
    }
  }
  if (!sum_) {
    for (size_t i = 0; i < nseq * V; ++i) out[i] = out[i] > 0.0f ? std::log1p(out[i]) : 0.0f;
  }
}

Result<std::unique_ptr<ColbertHead>> ColbertHead::Load(const std::string& dense_dir, size_t hidden,
                                                       cpu::Precision precision) {
  std::unique_ptr<ColbertHead> h(new ColbertHead());
  SHOAL_ASSIGN_OR_RETURN(auto weights, SafeTensors::OpenDir(dense_dir));
  const TensorView* t = weights->Find("linear.weight");
  if (!t || t->shape.size() != 2 || t->shape[1] != static_cast<int64_t>(hidden) || t->shape[0] < 1) {
    return InvalidInput(dense_dir + ": expected linear.weight of shape [dim, " + std::to_string(hidden) + "]");
  }
  h->dim_ = static_cast<size_t>(t->shape[0]);
  std::vector<std::vector<float>> converted;  // the Linear keeps its own copy
  WeightReader r(*weights, &converted, precision);
  SHOAL_ASSIGN_OR_RETURN(h->linear_, r.Linear({"linear"}, {h->dim_}, hidden));
  return h;
}

Result<std::unique_ptr<ColbertHead>> ColbertHead::LoadTorch(const std::string& pt_file, size_t hidden,
                                                            cpu::Precision precision) {
  SHOAL_ASSIGN_OR_RETURN(const auto tensors, ReadTorchStateDict(pt_file));
  auto w = tensors.find("weight"), b = tensors.find("bias");
  if (w == tensors.end() || w->second.shape.size() != 2 || w->second.shape[1] != static_cast<int64_t>(hidden) ||
      w->second.shape[0] < 1) {
    return InvalidInput(pt_file + ": expected weight of shape [dim, " + std::to_string(hidden) + "]");
  }
  std::unique_ptr<ColbertHead> h(new ColbertHead());
  h->dim_ = static_cast<size_t>(w->second.shape[0]);
  const float* bias = nullptr;
  if (b != tensors.end()) {
    if (b->second.values.size() != h->dim_) return InvalidInput(pt_file + ": bias is not [dim]");
    bias = b->second.values.data();
  }
  SHOAL_ASSIGN_OR_RETURN(h->linear_, cpu::Linear::Create(w->second.values.data(), cpu::WeightLayout::kOutIn, hidden,
                                                         h->dim_, bias, precision));
  return h;
}

void ColbertHead::Run(const float* hidden, size_t rows, float* out, int threads) const {
  linear_->Forward(hidden, rows, out, cpu::Activation::kNone, threads);
  for (size_t r = 0; r < rows; ++r) cpu::L2Normalize(out + r * dim_, dim_);
}

Result<std::unique_ptr<LexicalWeightsHead>> LexicalWeightsHead::LoadTorch(const std::string& pt_file,
                                                                          size_t hidden,
                                                                          std::vector<int32_t> skipped) {
  SHOAL_ASSIGN_OR_RETURN(auto tensors, ReadTorchStateDict(pt_file));
  auto w = tensors.find("weight"), b = tensors.find("bias");
  if (w == tensors.end() || w->second.values.size() != hidden || b == tensors.end() || b->second.values.size() != 1) {
    return InvalidInput(pt_file + ": expected weight [1, " + std::to_string(hidden) + "] and bias [1]");
  }
  std::unique_ptr<LexicalWeightsHead> h(new LexicalWeightsHead());
  h->weight_ = std::move(w->second.values);
  h->bias_ = b->second.values[0];
  h->skipped_ = std::move(skipped);
  std::sort(h->skipped_.begin(), h->skipped_.end());
  return h;
}

void LexicalWeightsHead::Run(const float* hidden, size_t rows, float* out) const {
  const size_t H = weight_.size();
  for (size_t r = 0; r < rows; ++r) {
    float dot = bias_;
    for (size_t k = 0; k < H; ++k) dot += hidden[r * H + k] * weight_[k];
    out[r] = std::max(dot, 0.0f);
  }
}

void LexicalWeightsHead::Entries(std::span<const int32_t> ids, const float* weights, uint32_t top_k,
                                 std::vector<uint32_t>* indices, std::vector<float>* values) const {
  // (id, weight) of the tokens kept, then the largest per id: no
  // vocabulary-sized scratch (bge-m3's has 250,002 entries).
  std::vector<std::pair<uint32_t, float>> kept;
  for (size_t j = 0; j < ids.size(); ++j) {
    if (weights[j] <= 0.0f || std::binary_search(skipped_.begin(), skipped_.end(), ids[j])) continue;
    kept.push_back({static_cast<uint32_t>(ids[j]), weights[j]});
  }
  std::sort(kept.begin(), kept.end());
  std::vector<float> best;
  std::vector<uint32_t> best_ids;
  for (const auto& [id, w] : kept) {
    if (!best_ids.empty() && best_ids.back() == id) {
      best.back() = std::max(best.back(), w);
    } else {
      best_ids.push_back(id);
      best.push_back(w);
    }
  }
  std::vector<uint32_t> order;
  SparseEntries(best, top_k, &order, values);
  indices->clear();
  for (uint32_t k : order) indices->push_back(best_ids[k]);
}

void SparseEntries(std::span<const float> weights, uint32_t top_k, std::vector<uint32_t>* indices,
                   std::vector<float>* values) {
  std::vector<uint32_t> nonzero;
  for (size_t v = 0; v < weights.size(); ++v) {
    if (weights[v] > 0.0f) nonzero.push_back(static_cast<uint32_t>(v));
  }
  auto larger = [&](uint32_t a, uint32_t b) { return weights[a] > weights[b] || (weights[a] == weights[b] && a < b); };
  if (top_k != 0 && top_k < nonzero.size()) {
    std::partial_sort(nonzero.begin(), nonzero.begin() + top_k, nonzero.end(), larger);
    nonzero.resize(top_k);
  } else {
    std::sort(nonzero.begin(), nonzero.end(), larger);
  }
  indices->assign(nonzero.begin(), nonzero.end());
  values->clear();
  for (uint32_t v : nonzero) values->push_back(weights[v]);
}

}  // namespace shoal::native
