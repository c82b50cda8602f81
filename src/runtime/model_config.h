// What a runtime is told about a model: the part of its profile that is the
// runtime's business, and nothing of the catalog's (pool, queue, pinning,
// tuned entries), which a runtime — in this process or out of it — has no use
// for. The worker, registration and the benchmarks' in-process baseline make
// it from the catalog's spec (FromSpec).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "catalog/task.h"
#include "runtime/runtime_options.h"

namespace shoal {

struct ModelConfig {
  std::string id;             // for messages and logs
  Task task = Task::kEncode;  // what it serves: encode, score or generate
  std::string path;           // its directory (or file), absolute
  uint32_t max_input_tokens = 512;  // longer inputs fail unless truncated
  // What one call may hold (workspace sizing) and, for a generator, how
  // many sequences run at once (its KV cache is sized for them).
  uint32_t max_batch_tokens = 16384;
  uint32_t max_batch_requests = 64;
  RuntimeOptions options{};  // the profile's section named after the runtime
  // Load it as a bare graph, a pipeline model's stage (OCR's detector):
  // Model::Run alone, no task of its own.
  bool graph = false;

  // The config of `spec`, its runtime's section parsed (INVALID_INPUT when
  // the section is not a mapping of values).
  static Result<ModelConfig> FromSpec(const ModelSpec& spec);
};

// A LoRA adapter as the runtime sees it.
struct LoraConfig {
  std::string name;
  std::string path;  // the PEFT directory, absolute
};

std::vector<LoraConfig> LoraConfigs(std::span<const LoraSpec> loras);

}  // namespace shoal
