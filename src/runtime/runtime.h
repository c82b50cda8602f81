// The boundary between the worker and inference engines.
//
// A Runtime turns a ModelSpec into a loaded Model; a Model runs batches. The
// worker owns Models through unique_ptr and calls Encode from one executor
// thread at a time per model (a Model need not be thread-safe). Runtimes
// report failures as Status values, per item where the input is at fault
// (too long, not text) and per call where the model is.
//
// kRuntimeApiVersion changes whenever these types change in a way an
// out-of-process runtime would notice.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/model_spec.h"
#include "common/status.h"

namespace shoal {

inline constexpr int kRuntimeApiVersion = 1;

struct EncodeInput {
  std::string_view text;
  bool truncate = false;   // cut to the model's limit instead of failing
  bool normalize = true;   // unit L2 norm
};

struct EncodeOutput {
  Status status;             // per item: INVALID_INPUT when the input is at fault
  std::vector<float> dense;  // the vector, when status is ok
  uint32_t tokens = 0;       // tokens the model saw (after truncation)
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelSpec& spec() const = 0;
  // Bytes the model holds (weights, workspace) for residency accounting.
  virtual size_t memory_bytes() const = 0;

  // Runs one batch. `out` has one slot per input. A non-ok return means the
  // whole batch failed (INFERENCE_ERROR); per-item failures go in out[i].
  virtual Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string_view name() const = 0;
  virtual Result<std::unique_ptr<Model>> Load(const ModelSpec& spec) = 0;
};

// The runtimes built into this binary, by name ("identity", ...); null when
// there is none of that name.
Runtime* FindRuntime(std::string_view name);

}  // namespace shoal
