// LoraAdapter: a PEFT LoRA adapter (adapter_config.json +
// adapter_model.safetensors) read and checked against the network it adapts,
// ready to add its low-rank updates to that network's dense layers.
//
// Format (Hugging Face PEFT, LoraConfig + save_pretrained): tensors
// "base_model.model.<module>.lora_A.weight" [r, in] (transformers' own PEFT
// integration leaves out "base_model.model.") and ".lora_B.weight"
// [out, r] per adapted module; the module's weight becomes
// W + scaling · B·A with scaling = lora_alpha / r (lora_alpha / √r with
// use_rslora). `modules_to_save` modules (a classifier head) are saved whole
// as "base_model.model.<module>.weight" / ".bias" and replace the base's.
// `target_modules` is a list of names (a module matches when its path is the
// name or ends in "." + name), a regular expression over whole module paths
// (a string), or "all-linear".
//
// What Shoal refuses at load, naming it: other PEFT types, DoRA, LoRA
// biases, fan_in_fan_out (Conv1D), rank_pattern / alpha_pattern, tensors of
// modules the network cannot adapt (embeddings, lm_head), a rank or shape
// that disagrees with the config or the base, targets that match nothing,
// adapter_model.bin without safetensors.
//
// Module paths are matched to the base's on whole dotted components from the
// end, so an adapter trained on BertModel ("encoder.layer.0...") fits a
// checkpoint stored with a task prefix ("bert.encoder.layer.0...") and the
// other way round.
//
// Threading: immutable after Load; shared by any number of calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native {

// What a network offers to adapters: its dense layers (by module path, in a
// fixed order: an adapter's updates are found by index) and the modules an
// adapter may replace whole (modules_to_save).
struct LoraTargets {
  struct Linear {
    std::string module;  // "encoder.layer.0.attention.self.query"
    size_t in = 0, out = 0;
  };
  std::vector<Linear> linears;
  std::vector<Linear> replaceable;  // with a bias
  // Dense layers the checkpoint has but this model never runs (BERT's pooler
  // under an embedding model): updates to them are accepted and ignored,
  // since PEFT's name matching ("dense") adapts them too.
  std::vector<std::string> unused;
};

// One adapted dense layer: x ↦ (x·Aᵀ)·(scaling·B)ᵀ (cpu::LowRankUpdate).
struct LoraUpdate {
  std::vector<float> at;  // [in][rank]: Aᵀ
  std::vector<float> bt;  // [rank][out]: (scaling · B)ᵀ
  size_t rank = 0, in = 0, out = 0;
};

class LoraAdapter {
 public:
  static Result<std::unique_ptr<LoraAdapter>> Load(const std::string& dir, const LoraTargets& targets);

  // The update of targets.linears[i], or null when the adapter leaves it be.
  const LoraUpdate* update(size_t i) const { return i < updates_.size() ? updates_[i].get() : nullptr; }
  // The replacement of targets.replaceable[i] (weights and bias), or null.
  const cpu::Linear* replacement(size_t i) const {
    return i < replacements_.size() ? replacements_[i].get() : nullptr;
  }
  bool replaces_any() const;

  uint32_t rank() const { return rank_; }
  float scaling() const { return scaling_; }
  size_t memory_bytes() const { return bytes_; }

 private:
  LoraAdapter() = default;
  uint32_t rank_ = 0;
  float scaling_ = 1.0f;
  size_t bytes_ = 0;
  std::vector<std::unique_ptr<LoraUpdate>> updates_;        // by target index
  std::vector<std::unique_ptr<cpu::Linear>> replacements_;  // by replaceable index
};

// Rows [first, first + rows) of a batch run under `adapter` (null: the base).
struct LoraSegment {
  size_t first = 0, rows = 0;
  const LoraAdapter* adapter = nullptr;
};

// Appends `rows` rows under `adapter` (null: the base) to `runs`, growing
// the last run when it has the same adapter.
void AddLoraRows(std::vector<LoraSegment>* runs, size_t rows, const LoraAdapter* adapter);

// y[r, offset : offset + out) += update(x[r]) for every row r of every
// segment whose adapter updates target `target`. x: [rows, in] contiguous;
// y: row stride `ldy`. Segments with no adapter, or none for this target,
// are skipped. All the segments' rows run in one parallel loop.
void ApplyLora(std::span<const LoraSegment> segments, size_t target, const float* x, size_t in, float* y,
               size_t ldy, size_t offset, int threads);

// Whether any segment's adapter updates `target`.
bool AnyLora(std::span<const LoraSegment> segments, size_t target);

}  // namespace shoal::native
