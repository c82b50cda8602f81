// The `native:` section of a model profile, parsed and checked.
#pragma once

#include <optional>

#include "runtime/runtime_options.h"
#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"

namespace shoal::native {

struct NativeOptions {
  cpu::Precision precision = cpu::Precision::kF32;
  // Where the network runs: -1 for the CPU (`device: cpu`, the default), or
  // the index of the NVIDIA GPU (`device: cuda` for GPU 0, `cuda:N`). The
  // CUDA backend runs BERT-family encoders in bf16 and needs a binary built
  // with -DSHOAL_CUDA=ON.
  int cuda_device = -1;
  std::optional<Pooling> pooling;  // else the model directory's files
  // Decoder embedders: `attention: causal | bidirectional`, for a checkpoint
  // whose config.json does not say how it was trained (else the config's).
  std::optional<bool> bidirectional;
  // Generators (decoder_model.h): the positions one sequence may use (0: the
  // config's max_position_embeddings, at most 4096), the KV cache's size in
  // positions (0: enough for max_batch_requests full sequences, within
  // 256 MiB), and the positions per KV block.
  uint32_t max_context = 0;
  uint32_t kv_cache_tokens = 0;
  uint32_t kv_block_tokens = 16;
  // Host memory the model's LoRA adapters may hold at once (native.
  // lora_budget_mb); past it the least recently used one is dropped, to be
  // loaded again when next asked for.
  uint64_t lora_budget_bytes = uint64_t{1} << 30;
};

// What a model directory holds, as far as its options go.
enum class NativeModelKind { kEncoder, kDecoderEmbedder, kGenerator, kUseLite, kVision };

// An option that does not apply to `kind` (max_context on an encoder,
// attention on a generator) is INVALID_INPUT naming it, not ignored.
Result<NativeOptions> ParseNativeOptions(const RuntimeOptions& options, NativeModelKind kind);

}  // namespace shoal::native
