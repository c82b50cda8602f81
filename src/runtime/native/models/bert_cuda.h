// CudaBert: the BERT-family encoder (bert.h) on an NVIDIA GPU — the CUDA
// backend of the native runtime, built with -DSHOAL_CUDA=ON.
//
// Weights live on the device in bf16 (LayerNorm parameters in fp32); GEMMs
// run through cuBLASLt with the bias, and the residual connection where there
// is one, in the epilogue (the intermediate layer's activation too, when
// chosen) (kernels/cuda/gemm.h);
// attention runs over the packed, unpadded sequences (kernels/cuda/
// attention.cu, or attention_registers.cu); LayerNorm, activations, pooling and normalization run on
// the device, so a batch crosses the bus twice: token ids in (pinned, one
// copy), pooled vectors or logits out (pinned, one copy).
//
// Threading: immutable after Load, except the pool of execution contexts.
// Each call takes a context (a CUDA stream, a cuBLASLt runner, activation
// buffers, pinned staging) from the pool, or makes one, and gives it back:
// so one executor thread effectively owns one stream, and calls from several
// executors run concurrently on the GPU. memory_bytes() counts the weights
// and every context's buffers as they are now.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/native/models/encoder_network.h"

namespace shoal::native {
namespace cuda {
class StageTimeline;
}

// The backend's kernel choices, for A/B measurements within one run
// (bench/cuda_encoder.cc); the defaults are what serves. They stay issue
// 10's kernels, measured on an H200, until the others have run on a GPU
// (docs/native-runtime.md).
struct CudaKernelChoice {
  // Attention with scores in registers (attention_registers.cu); false: the
  // kernel staging them in shared memory (attention.cu).
  bool register_attention = false;
  // The intermediate GEMM's epilogue applies the activation; false: a
  // separate kernel rereads and rewrites its output.
  bool activation_in_gemm = false;
};

class CudaBert final : public EncoderNetwork {
 public:
  // Loads the checkpoint in `dir` onto GPU `device`. `reserve_tokens`: the
  // batch size (in tokens) the first context is sized for at load, so the
  // memory a full batch needs is taken, and counted, before any request.
  static Result<std::unique_ptr<CudaBert>> Load(const std::string& dir, const EncoderConfig& config, int device,
                                                size_t reserve_tokens,
                                                const std::function<void(double)>& progress = {},
                                                CudaKernelChoice kernels = {});
  ~CudaBert() override;

  const EncoderConfig& config() const override { return config_; }
  bool has_classifier() const override;
  size_t memory_bytes() const override;

  Status Embed(std::span<const TokenSequence> seqs, Pooling pooling, bool normalize, float* out,
               int threads) const override;
  Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const override;

  // Where one forward pass over `seqs` spends its GPU time: milliseconds per
  // stage (GEMMs, attention, layer norms, ...) summed over the layers, from
  // CUDA events between the stages. For benchmarks; the events serialize
  // nothing, but each costs a little.
  Result<std::map<std::string, double>> ProfileEmbed(std::span<const TokenSequence> seqs) const;

 private:
  struct Weights;
  class Context;
  class ContextLease;
  CudaBert();

  Result<ContextLease> Acquire() const;
  // What every call starts with: checks `seqs`, selects the model's GPU for
  // this thread, takes a context.
  Result<ContextLease> Begin(std::span<const TokenSequence> seqs) const;
  void Release(std::unique_ptr<Context> c) const;
  // Grows `c` to hold a batch of `tokens` rows in `sequences` sequences.
  Status Reserve(Context& c, size_t tokens, size_t sequences) const;
  // Queues the encoder over `seqs` on the context's stream; its hidden buffer
  // then holds the last hidden states, its offsets the sequence bounds.
  // With a timeline, marks the end of each stage on the stream.
  Status Forward(Context& c, std::span<const TokenSequence> seqs, cuda::StageTimeline* timeline = nullptr) const;
  // Copies `floats` results from the context's output buffer to `out` and
  // waits for the stream: the end of every call.
  Status CopyOut(Context& c, size_t floats, float* out) const;

  EncoderConfig config_;
  CudaKernelChoice kernels_;
  int device_ = 0;
  std::unique_ptr<Weights> weights_;
  size_t weight_bytes_ = 0;

  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Context>> idle_;  // guarded by mu_
  mutable std::atomic<size_t> context_bytes_{0};
};

}  // namespace shoal::native
