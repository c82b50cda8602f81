#include "runtime/native/models/encoder_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace shoal::native {

namespace {

// A RelativeBias for sequences of up to max_len rows from bias_at(h, j − i).
template <class BiasAt>
cpu::RelativeBias TabulateBias(size_t heads, size_t max_len, BiasAt bias_at) {
  cpu::RelativeBias b;
  b.max_len = max_len;
  const size_t span = 2 * max_len - 1;
  b.table.resize(heads * span);
  for (size_t h = 0; h < heads; ++h) {
    for (size_t i = 0; i < span; ++i) {
      b.table[h * span + i] = bias_at(h, static_cast<int64_t>(i) - static_cast<int64_t>(max_len - 1));
    }
  }
  return b;
}

}  // namespace

std::string EncoderWeightPrefix(const SafeTensors& w) {
  for (const char* p : {"", "bert.", "roberta.", "distilbert.", "mpnet.", "electra.", "deberta.", "model.", "encoder."}) {
    if (w.Find(std::string(p) + "embeddings.word_embeddings.weight")) return p;
  }
  return "";
}

std::string WordEmbeddingsName(const EncoderConfig& config, const SafeTensors& w) {
  if (config.is_modernbert()) {
    return (w.Find("embeddings.tok_embeddings.weight") ? "" : "model.") + std::string("embeddings.tok_embeddings.weight");
  }
  return EncoderWeightPrefix(w) + "embeddings.word_embeddings.weight";
}

ClassifierHeadNames FindClassifierHead(const SafeTensors& w, const std::string& prefix) {
  if (w.Find("classifier.out_proj.weight")) return {"classifier.dense", "classifier.out_proj"};  // RoBERTa
  if (w.Find("pre_classifier.weight")) return {"pre_classifier", "classifier", cpu::Activation::kRelu};  // DistilBERT
  return {prefix + "pooler.dense", "classifier"};  // BERT
}

Status CheckSequences(const EncoderConfig& config, std::span<const TokenSequence> seqs) {
  for (size_t s = 0; s < seqs.size(); ++s) {
    const TokenSequence& q = seqs[s];
    if (q.ids.empty()) return InvalidInput("sequence " + std::to_string(s) + " has no tokens");
    if (q.ids.size() > config.max_tokens()) {
      return InvalidInput("sequence " + std::to_string(s) + " has " + std::to_string(q.ids.size()) +
                          " tokens, over the model's " + std::to_string(config.max_tokens()));
    }
    if (q.attend > q.ids.size()) {
      return InvalidInput("sequence " + std::to_string(s) + ": attend " + std::to_string(q.attend) +
                          " is over its " + std::to_string(q.ids.size()) + " tokens");
    }
    if (!q.type_ids.empty() && q.type_ids.size() != q.ids.size()) {
      return InvalidInput("sequence " + std::to_string(s) + ": type_ids and ids differ in length");
    }
    for (int32_t id : q.ids) {
      if (id < 0 || static_cast<uint32_t>(id) >= config.vocab_size) {
        return InvalidInput("token id " + std::to_string(id) + " is outside the model's vocabulary of " +
                            std::to_string(config.vocab_size));
      }
    }
    // A model without token types (ModernBERT) ignores them.
    for (int32_t t : config.type_vocab_size == 0 ? std::span<const int32_t>() : q.type_ids) {
      if (t < 0 || static_cast<uint32_t>(t) >= config.type_vocab_size) {
        return InvalidInput("token type " + std::to_string(t) + " is outside the model's " +
                            std::to_string(config.type_vocab_size));
      }
    }
  }
  return Status::Ok();
}

Status EncoderNetwork::Embed(std::span<const TokenSequence> seqs, Pooling pooling, bool normalize, float* out,
                             int threads) const {
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  SHOAL_RETURN_IF_ERROR(HiddenStates(seqs, &hidden, &offsets, threads));
  PoolSequences(hidden.data(), config().hidden_size, offsets, pooling, normalize, out);
  return Status::Ok();
}

std::vector<uint32_t> SequenceOffsets(std::span<const TokenSequence> seqs) {
  std::vector<uint32_t> offsets{0};
  for (const TokenSequence& q : seqs) offsets.push_back(offsets.back() + static_cast<uint32_t>(q.ids.size()));
  return offsets;
}

std::vector<uint32_t> KeyLimits(std::span<const TokenSequence> seqs) {
  std::vector<uint32_t> keys;
  if (std::none_of(seqs.begin(), seqs.end(), [](const TokenSequence& q) { return q.attend != 0; })) return keys;
  for (const TokenSequence& q : seqs) keys.push_back(q.attend);
  return keys;
}

void PoolSequences(const float* hidden, size_t width, std::span<const uint32_t> offsets, Pooling pooling,
                   bool normalize, float* out) {
  const size_t n = offsets.size() - 1;
  if (pooling == Pooling::kMean) {
    cpu::MeanPool(hidden, width, offsets, out);
  } else {
    for (size_t s = 0; s < n; ++s) {
      const size_t row = pooling == Pooling::kCls ? offsets[s] : offsets[s + 1] - 1;
      std::memcpy(out + s * width, hidden + row * width, width * sizeof(float));
    }
  }
  if (normalize) {
    for (size_t s = 0; s < n; ++s) cpu::L2Normalize(out + s * width, width);
  }
}

std::vector<float> AlibiSlopes(int heads) {
  auto power_of_two = [](int n) {
    std::vector<float> s(n);
    const double start = std::pow(2.0, -8.0 / n);
    for (int i = 0; i < n; ++i) s[i] = static_cast<float>(std::pow(start, i + 1));
    return s;
  };
  const int below = 1 << static_cast<int>(std::floor(std::log2(std::max(heads, 1))));
  if (below == heads) return power_of_two(heads);
  std::vector<float> s = power_of_two(below);
  const std::vector<float> next = AlibiSlopes(2 * below);
  for (int i = 0; s.size() < static_cast<size_t>(heads); i += 2) s.push_back(next[i]);
  return s;
}

cpu::RelativeBias AlibiBias(std::span<const float> slopes, size_t max_len) {
  return TabulateBias(slopes.size(), max_len, [&](size_t h, int64_t distance) {
    return -(slopes[h] * static_cast<float>(distance < 0 ? -distance : distance));
  });
}

int32_t MpnetBucket(int64_t distance) {
  // 32 buckets, max distance 128: keys before the query (distance < 0) in
  // 0..15, after it in 16..31; |d| < 8 exact, beyond 8 + ⌊8·log₁₆(|d|/8)⌋ =
  // 8 + ⌊log₂(|d|²/64)⌋, capped at 15. In integers, so |d| = 16, 32, 64
  // land where the real logarithm puts them (a float log one ulp low would not).
  const int64_t n = distance < 0 ? -distance : distance;
  const int32_t base = distance > 0 ? 16 : 0;
  if (n < 8) return base + static_cast<int32_t>(n);
  const int log2 = std::bit_width(static_cast<uint64_t>(n * n / 64)) - 1;
  return base + std::min(8 + log2, 15);
}

cpu::RelativeBias MpnetBias(const float* weight, size_t heads, size_t max_len) {
  return TabulateBias(heads, max_len, [&](size_t h, int64_t distance) {
    return weight[static_cast<size_t>(MpnetBucket(distance)) * heads + h];
  });
}

std::vector<float> RotaryTable(size_t positions, size_t head_dim, double theta) {
  const size_t half = head_dim / 2;
  std::vector<float> t(positions * head_dim);
  for (size_t p = 0; p < positions; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / head_dim);
      t[p * head_dim + i] = static_cast<float>(std::cos(angle));
      t[p * head_dim + half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return t;
}

cpu::Activation ActivationOf(HiddenAct a) {
  switch (a) {
    case HiddenAct::kGelu: return cpu::Activation::kGelu;
    case HiddenAct::kGeluTanh: return cpu::Activation::kGeluTanh;
    case HiddenAct::kRelu: return cpu::Activation::kRelu;
  }
  return cpu::Activation::kGelu;
}

void EncoderPositions(const EncoderConfig& config, std::span<const int32_t> ids, int32_t* out) {
  const bool roberta = config.roberta_positions();
  const int32_t pad = config.pad_token_id;
  int32_t next = roberta ? pad + 1 : 0;
  for (size_t j = 0; j < ids.size(); ++j) out[j] = roberta && ids[j] == pad ? pad : next++;
}

}  // namespace shoal::native
