#include "runtime/model_config.h"

namespace shoal {

Result<ModelConfig> ModelConfig::FromSpec(const ModelSpec& spec) {
  ModelConfig c;
  c.id = spec.id;
  c.task = spec.task;
  c.path = spec.path;
  c.max_input_tokens = spec.max_input_tokens;
  c.max_batch_tokens = spec.batching.max_batch_tokens;
  c.max_batch_requests = spec.batching.max_batch_requests;
  auto options = RuntimeOptions::FromJson(spec.runtime, spec.runtime_options_json);
  if (!options.ok()) return options.status();
  c.options = std::move(options).value();
  return c;
}

std::vector<LoraConfig> LoraConfigs(std::span<const LoraSpec> loras) {
  std::vector<LoraConfig> out;
  out.reserve(loras.size());
  for (const LoraSpec& l : loras) out.push_back({l.name, l.path});
  return out;
}

}  // namespace shoal
