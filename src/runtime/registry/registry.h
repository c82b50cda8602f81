// The runtimes of this process, found by the name a profile gives
// (`runtime: native`). A runtime joins only when it implements this
// process's version of the runtime contract (runtime.h kRuntimeApiVersion):
// one written against another version is refused with a message that says
// which it speaks.
//
// Threading: Register before use; Find from any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "catalog/model_spec.h"
#include "common/metrics.h"
#include "runtime/runtime.h"

namespace shoal {

class RuntimeRegistry {
 public:
  // INVALID_INPUT when `runtime` speaks another version of the contract, or
  // its name is taken.
  Status Register(std::unique_ptr<Runtime> runtime);
  Runtime* Find(std::string_view name) const;

 private:
  std::map<std::string, std::unique_ptr<Runtime>, std::less<>> runtimes_;
};

// The built-in runtimes' registry (identity and native), made on first use.
const RuntimeRegistry& BuiltInRuntimes();

// BuiltInRuntimes().Find(name): null when there is no runtime of that name.
Runtime* FindRuntime(std::string_view name);

// Whether `runtime` is one that runs only in a runtime process of its own —
// a sidecar in another language: onnx (ONNX Runtime through Node), pytorch
// (TorchScript through Python) — so `process: worker` cannot hold it.
bool RunsInItsOwnProcess(std::string_view runtime);

// The runtime a Hugging Face checkpoint of `model_type` (config.json's)
// loads through when its profile names none: native where it runs the
// type, else pytorch, which runs it through transformers where Python can
// import it.
std::string_view RuntimeForModelType(std::string_view model_type);

namespace runtime_process {
class RemoteRuntime;
}

// How runtime processes are run and watched (runtime/process).
struct RuntimeProcessSettings {
  // The `shoal` binary whose `runtime-host` serves a built-in runtime out of
  // process; empty: $SHOAL_RUNTIME_HOST, else this process's own binary.
  std::string host_binary;
  // Where the sidecars' scripts are (onnx/runtime.mjs, pytorch/runtime.py);
  // empty: $SHOAL_SIDECAR_DIR, else this source tree's src/runtime.
  std::string sidecar_dir;
  std::chrono::milliseconds health_every{1000};
  std::chrono::milliseconds health_timeout{10000};
  std::chrono::milliseconds call_timeout{60000};
  uint64_t memory_headroom_bytes = uint64_t{1} << 30;
  MetricsRegistry* metrics = nullptr;  // shoal_runtime_process_deaths_total, if set
};

// The runtime a model loads through (docs/runtime-protocol.md "Where a
// model runs"): the runtime its profile names, in this process, or — for
// `process: shared` or `own`, and always for a sidecar — that runtime in a
// runtime process, through a RemoteRuntime. Processes start when a model
// first loads into them and stop when their last model leaves. The `ocr`
// runtime (pipelines) is one per ModelRuntimes: its stages load through
// this same For, into the engine runtime's process.
//
// Threading: For from any thread. The runtimes it returns live as long as
// it does.
class ModelRuntimes {
 public:
  explicit ModelRuntimes(RuntimeProcessSettings settings = {});
  ~ModelRuntimes();

  // Null when no runtime has the profile's name, or the profile asks to run
  // a sidecar in the worker's process.
  Runtime* For(const ModelSpec& spec);

 private:
  const RuntimeProcessSettings settings_;
  Family<Counter>* deaths_ = nullptr;
  std::mutex mu_;  // guards remote_
  std::map<std::string, std::unique_ptr<runtime_process::RemoteRuntime>> remote_;  // by process key
  const std::unique_ptr<Runtime> pipelines_;  // the `ocr` runtime
};

}  // namespace shoal
