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
//     inputs_per_call: 8                 # an embedder's texts per /embeddings call;
//                                        # default: what the server says it runs at once
//
// The key itself is never in the profile: profiles are listed over the admin
// API and stored in the catalog, so the profile names the variable instead.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/runtime_options.h"

namespace shoal::upstream {

struct UpstreamOptions {
  std::string base_url;     // http(s)://host:port/prefix, without a trailing slash
  std::string model;        // the `model` sent upstream
  std::string api_key_env;  // empty: no Authorization header
  uint32_t timeout_ms = 60000;
  uint32_t connect_timeout_ms = 5000;
  uint32_t inputs_per_call = 0;  // 0: ask the server at load (ServerCallLimit); 0 still: no limit
};

// The texts one /embeddings call should carry, from the server's own
// description at its root: llama-server's /props `total_slots` (the
// sequences it runs at once; the rest of a larger call waits for slots),
// TEI's /info `max_client_batch_size` (it refuses larger calls). 0 when
// neither says.
uint32_t ServerCallLimit(std::string_view props_json, std::string_view info_json);

// `id` is the model's id, the default upstream name.
Result<UpstreamOptions> ParseUpstreamOptions(const RuntimeOptions& options, const std::string& id);

}  // namespace shoal::upstream
