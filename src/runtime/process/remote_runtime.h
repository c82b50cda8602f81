// RemoteRuntime: a runtime in a process of its own, behind the runtime
// protocol, seen through the runtime contract (runtime.h) like any other —
// the worker loads and calls its models as if they were in its process.
//
// A remote model remembers its config, its adapters and the generation of
// the process it was loaded into. When that process has been replaced (it
// died), the next call loads the model into the new one first. While no
// process runs, calls fail with NO_CAPACITY (the worker puts their items
// back on the queue: nothing accepted is lost); a model that no longer
// loads fails them with MODEL_LOAD_FAILED. A reply that does not match its
// request (wrong item count, malformed) is the runtime's fault: the process
// is killed and the call fails with NO_CAPACITY.
//
// Threading: as the contract says — a model may be called from several
// threads at once; the calls are pipelined on the one connection.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/process/runtime_process.h"
#include "runtime/runtime.h"

namespace shoal::runtime_process {

struct CallTimeouts {
  std::chrono::milliseconds call{60000};   // a batch, unload, loras
  std::chrono::milliseconds load{600000};  // load and check_lora
};

class RemoteRuntime : public Runtime {
 public:
  // `name`: the runtime's name (its hello must say the same).
  RemoteRuntime(std::string name, std::shared_ptr<RuntimeProcess> process, CallTimeouts timeouts = {});

  std::string_view name() const override { return name_; }
  int api_version() const override { return kRuntimeApiVersion; }
  // What its process's last hello said (empty before the first start), and
  // tokenize for a runtime that takes tokens (Shoal answers it).
  std::vector<Task> tasks() const override;
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override;
  Result<uint64_t> CheckLora(const ModelConfig& base, const LoraConfig& lora) override;

 private:
  const std::string name_;
  const std::shared_ptr<RuntimeProcess> process_;
  const CallTimeouts timeouts_;
};

}  // namespace shoal::runtime_process
