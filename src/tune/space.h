// What `shoal tune` sweeps for a model: the parameters, their grids, and
// how a point of the grid becomes a model spec to register.
//
//   precision           f32, bf16, int8 — native runtime, Hugging Face
//                       models (USE-Lite and the other runtimes have
//                       none); those other than f32 only where they stay
//                       within the quantized-variant bound of f32
//                       (admin/variant_gate.h; the tuner checks)
//   threads             1, 2, 4, ... up to the cores (per-model `threads`)
//   max_batch_requests  1, 2, 4, ... 512
//   max_batch_tokens    powers of two from the model's max_input_tokens
//                       (at least 512) to 65536
//   max_batch_wait_ms   0, 1, 2, 5, 10, 20 — not when the profile turns on
//                       adaptive batching, which sets the wait itself
//
// Dimensions are searched in that order: precision and threads change the
// most (and need a reload), then the batch caps, then the wait. The
// profile's own (untuned) values are added to each grid, so the start point
// is exactly the baseline.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "common/status.h"
#include "tune/search.h"

namespace shoal::tune {

// One candidate configuration.
struct Params {
  uint32_t max_batch_tokens = 0;
  uint32_t max_batch_requests = 0;
  uint32_t max_batch_wait_ms = 0;
  uint32_t threads = 0;   // cores per batch (explicit: 0 is resolved to the cores)
  std::string precision;  // "" when the runtime has none to tune

  bool operator==(const Params&) const = default;
  // "requests 32, tokens 4096, wait 2 ms, threads 2, bf16"
  std::string Describe() const;
};

inline constexpr const char* kDimensionNames[] = {"precision", "threads", "max_batch_requests",
                                                  "max_batch_tokens", "max_batch_wait_ms"};

// The precisions a spec's runtime offers ({} when none): f32, bf16 and
// int8 for native Hugging Face models (config.json in its directory).
std::vector<std::string> TunablePrecisions(const ModelSpec& spec);

// The parameters `spec` runs with; threads 0 is taken as `cores` (the
// worker's share with one executor).
Params ParamsOf(const ModelSpec& spec, int cores);

// `base` (an untuned spec) with `p` applied: batching limits, `threads`,
// and the runtime's `precision` option when p has one.
ModelSpec WithParams(const ModelSpec& base, const Params& p);

struct Space {
  std::vector<Dimension> dims;
  Point start;
  std::vector<std::string> precisions;  // the precision dimension's values, by index

  Params At(const Point& p) const;
};

// The space for `base` on `cores` cores. `only`: the dimensions to sweep
// (names as above; empty: all that apply); the others stay at the
// baseline's values. An unknown name, or one that does not apply to the
// model, is INVALID_INPUT. `refused`: precisions not to offer (outside
// their bound); the baseline's own is offered whatever it is.
Result<Space> BuildSpace(const ModelSpec& base, int cores, const std::vector<std::string>& only = {},
                         const std::vector<std::string>& refused = {});

}  // namespace shoal::tune
