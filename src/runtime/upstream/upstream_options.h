// The `upstream:` section of a model profile, parsed: which OpenAI-compatible
// server serves the model and how to reach it (docs/architecture.md, "The upstream runtime").
// Unknown options are refused (INVALID_INPUT naming them), as for every
// runtime.
//
//   upstream:
//     base_url: http://10.0.0.7:8000/v1  # where /embeddings, /completions live
//     model: Qwen/Qwen3-0.6B             # the upstream's name; default: the id
//     api_key_env: VLLM_API_KEY          # the worker's variable holding the key
//     timeout_ms: 60000                  # an embeddings call; a stream's silence
//
// The key itself is never in the profile: profiles are listed over the admin
// API and stored in the catalog, so the profile names the variable instead.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "runtime/runtime_options.h"

namespace shoal::upstream {

struct UpstreamOptions {
  std::string base_url;     // http(s)://host:port/prefix, without a trailing slash
  std::string model;        // the `model` sent upstream
  std::string api_key_env;  // empty: no Authorization header
  uint32_t timeout_ms = 60000;
  uint32_t connect_timeout_ms = 5000;
};

// `id` is the model's id, the default upstream name.
Result<UpstreamOptions> ParseUpstreamOptions(const RuntimeOptions& options, const std::string& id);

}  // namespace shoal::upstream
