// AttentionPoolingHead: SigLIP's "MAP" head (multihead attention pooling),
// which turns an image's patch states into one vector: a learned probe
// attends over the patches (torch.nn.MultiheadAttention: one query, keys and
// values projected from the states, softmax(q·kᵀ/√d)·v per head, then the
// output projection), and the result goes through LayerNorm and an MLP with
// a residual, as modeling_siglip.py's SiglipMultiheadAttentionPoolingHead.
//
// The probe's query projection does not depend on the input: it is computed
// once at load. Threading: immutable after Load; Forward may run from
// several threads at once.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

class AttentionPoolingHead {
 public:
  // `prefix` names the head's tensors ("vision_model.head."): probe,
  // attention.in_proj_weight/bias, attention.out_proj, layernorm, mlp.fc1/fc2.
  static Result<std::unique_ptr<AttentionPoolingHead>> Load(WeightReader& r, const std::string& prefix,
                                                            size_t hidden, size_t intermediate, int heads, float eps,
                                                            cpu::Precision precision);

  // x: the states of several sequences, packed ([rows, hidden]; sequence s
  // is rows [offsets[s], offsets[s+1])); out: one vector per sequence.
  void Forward(const float* x, std::span<const uint32_t> offsets, float* out, int threads) const;

  size_t memory_bytes() const;

 private:
  AttentionPoolingHead() = default;

  size_t hidden_ = 0, intermediate_ = 0;
  int heads_ = 1;
  float eps_ = 1e-6f;
  std::vector<float> query_;             // the probe through the query projection: [hidden]
  std::unique_ptr<cpu::Linear> kv_;      // [hidden] → [2 · hidden], keys then values
  std::unique_ptr<cpu::Linear> out_;     // [hidden] → [hidden]
  const float* norm_gamma_ = nullptr;
  const float* norm_beta_ = nullptr;
  std::unique_ptr<cpu::Linear> fc1_;     // GELU (tanh), as SigLIP's hidden_act
  std::unique_ptr<cpu::Linear> fc2_;
};

}  // namespace shoal::native
