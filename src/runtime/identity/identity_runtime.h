// The `identity` runtime: deterministic vectors derived from the input text,
// at a configurable cost, for measuring the serving plane alone. It is not a
// model and is never a default for real traffic; /v1/models labels it.
//
// Profile section:
//   identity:
//     dim: 384              # vector length
//     us_per_token: 0       # simulated device time per token in a batch
//     us_per_batch: 0       # simulated fixed time per batch
//     efficient_batch: 0    # test knob (0: off): items of a batch past this
//     us_per_excess_item: 0 # many each cost this much more, a stand-in for
//                           # a device whose batches stop paying past a size;
//                           # with us_per_excess_item > us_per_batch /
//                           # efficient_batch, throughput peaks at batches of
//                           # exactly efficient_batch: a known optimum for
//                           # the tuning loop's test (tests/integration/tune_test.cc)
//     fail_on: ""           # an input whose text contains this (when not
//                           # empty) fails with INFERENCE_ERROR: a deliberate
//                           # fault, so tests can produce a model's failure
//                           # through the real path (the other items of its
//                           # batch succeed)
//
// Tokens are whitespace-separated words (at least one per input). The vector
// for a text is a function of its (possibly truncated) token sequence only, so
// tests can compute the expected output with IdentityVector().
//
// LoRA, as a stand-in for testing the plumbing (none of it is a real
// adapter): CheckLora accepts any directory holding an adapter_config.json
// (its content is not read) and measures kIdentityLoraBytes; UpdateLoras
// records the names. An input under an adapter in that list gets the vector
// IdentityVector(tokens, dim, normalize, name) — the same function with the
// adapter's name mixed into its seed, so each adapter answers its own
// deterministic vector, different from the base's and the other adapters';
// an input under any other adapter fails with MODEL_NOT_FOUND.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/runtime.h"

namespace shoal {

struct IdentityOptions {
  uint32_t dim = 384;
  uint32_t us_per_token = 0;
  uint32_t us_per_batch = 0;
  uint32_t efficient_batch = 0;  // test knob, with us_per_excess_item (above)
  uint32_t us_per_excess_item = 0;
  // What it claims to hold loaded, and how long a load takes: stand-ins for
  // a real model's size and cold-load time in residency tests and benchmarks.
  uint32_t memory_mb = 1;
  uint32_t load_ms = 0;
  std::string fail_on;  // empty: never fails
};

// The words of `text` the identity model counts as tokens.
std::vector<std::string_view> IdentityTokens(std::string_view text);

// What CheckLora says an adapter holds.
inline constexpr uint64_t kIdentityLoraBytes = 64 * 1024;

// The vector the identity model returns for `tokens` (before normalization
// when `normalize` is false), under the LoRA adapter `lora` ("" the base).
std::vector<float> IdentityVector(const std::vector<std::string_view>& tokens, uint32_t dim,
                                  bool normalize, std::string_view lora = {});

class IdentityRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "identity"; }
  int api_version() const override { return 17; }
  std::vector<Task> tasks() const override { return {Task::kEncode, Task::kTokenize}; }
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override;
  Result<uint64_t> CheckLora(const ModelConfig& base, const LoraConfig& lora) override;
};

}  // namespace shoal
