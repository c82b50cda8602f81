// PreNormBlocks: the transformer blocks CLIP's and SigLIP's towers (image and
// text) and ViT share — per layer, LayerNorm → self-attention → residual,
// LayerNorm → MLP → residual — over packed rows (sequence s is rows
// [offsets[s], offsets[s+1]), attention within each sequence).
//
// Threading: immutable after Load; Forward may run from several threads at
// once (scratch memory is per call), each call using at most `threads` cores.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

// The MLP's activation: quick_gelu (x · σ(1.702 x), CLIP), gelu (erf, ViT),
// gelu_pytorch_tanh / gelu_new (SigLIP).
enum class BlockActivation { kQuickGelu, kGelu, kGeluTanh };

// From config.json's hidden_act; INVALID_INPUT naming `field` for another.
Result<BlockActivation> ParseBlockActivation(const std::string& name, const std::string& field);

struct BlockShape {
  size_t hidden = 0, intermediate = 0, layers = 0;
  int heads = 1;
  BlockActivation activation = BlockActivation::kGelu;
  float eps = 1e-5f;
};

// The checkpoint's names: layer i's tensors are `layer` + i + "." + each
// name, LayerNorms with .weight/.bias, projections nn.Linear with biases.
struct BlockNames {
  std::string layer;  // "vision_model.encoder.layers."
  std::string norm1, q, k, v, out, norm2, fc1, fc2;
};

// CLIP's and SigLIP's names (both towers), under `tower` ("vision_model.").
BlockNames ClipBlockNames(const std::string& tower);

class PreNormBlocks {
 public:
  // progress, when set, is called with the fraction of layers loaded.
  static Result<std::unique_ptr<PreNormBlocks>> Load(WeightReader& r, const BlockNames& names,
                                                     const BlockShape& shape,
                                                     const std::function<void(double)>& progress = {});
  ~PreNormBlocks();

  // x: [offsets.back(), hidden], transformed in place. causal: a row attends
  // only to itself and the rows before it in its sequence.
  void Forward(float* x, std::span<const uint32_t> offsets, bool causal, int threads) const;

  const BlockShape& shape() const { return shape_; }
  size_t memory_bytes() const { return bytes_; }

 private:
  struct Layer;
  PreNormBlocks() = default;

  BlockShape shape_;
  std::vector<Layer> layers_;
  size_t bytes_ = 0;
};

}  // namespace shoal::native
