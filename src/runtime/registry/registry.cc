#include "runtime/registry/registry.h"

#include <unistd.h>

#include <cstdlib>

#include "common/log.h"
#include "runtime/identity/identity_runtime.h"
#include "runtime/native/loaders/model_types.h"
#include "runtime/native/native_runtime.h"
#include "runtime/ocr/ocr_runtime.h"
#include "runtime/process/remote_runtime.h"
#include "runtime/upstream/upstream_runtime.h"

namespace shoal {

Status RuntimeRegistry::Register(std::unique_ptr<Runtime> runtime) {
  const std::string name(runtime->name());
  if (runtime->api_version() != kRuntimeApiVersion) {
    return InvalidInput("runtime '" + name + "' implements version " + std::to_string(runtime->api_version()) +
                        " of the runtime contract; this Shoal speaks version " +
                        std::to_string(kRuntimeApiVersion));
  }
  if (runtimes_.count(name)) return InvalidInput("runtime '" + name + "' is registered already");
  runtimes_.emplace(name, std::move(runtime));
  return Status::Ok();
}

Runtime* RuntimeRegistry::Find(std::string_view name) const {
  auto it = runtimes_.find(name);
  return it == runtimes_.end() ? nullptr : it->second.get();
}

const RuntimeRegistry& BuiltInRuntimes() {
  static const RuntimeRegistry registry = [] {
    RuntimeRegistry r;
    std::unique_ptr<Runtime> builtins[] = {std::make_unique<IdentityRuntime>(), std::make_unique<NativeRuntime>(),
                                           std::make_unique<UpstreamRuntime>()};
    for (auto& runtime : builtins) {
      if (Status s = r.Register(std::move(runtime)); !s.ok()) spdlog::error("runtimes: {}", s.message());
    }
    return r;
  }();
  return registry;
}

Runtime* FindRuntime(std::string_view name) { return BuiltInRuntimes().Find(name); }

namespace {

// Runtimes that run only in a process of their own
// (docs/runtime-protocol.md): an interpreter and its script under the
// sidecar directory, or (no interpreter) a program built beside shoal.
struct Sidecar {
  std::string_view runtime, interpreter, script;
  const char* interpreter_env = nullptr;  // an environment variable that names another interpreter
};
constexpr Sidecar kSidecars[] = {
    {"onnx", "node", "onnx/runtime.mjs"},  // ONNX Runtime, through onnxruntime-node
    // TorchScript through Debian's torch; transformers where the interpreter has it.
    {"pytorch", "/usr/bin/python3", "pytorch/runtime.py", "SHOAL_PYTORCH_PYTHON"},
    {"llamacpp", "", "shoal-llamacpp"},  // GGUF, through llama.cpp's libraries
};

std::string Interpreter(const Sidecar& s) {
  const char* env = s.interpreter_env ? std::getenv(s.interpreter_env) : nullptr;
  return env && *env ? env : std::string(s.interpreter);
}

const Sidecar* FindSidecar(std::string_view runtime) {
  for (const Sidecar& s : kSidecars) {
    if (s.runtime == runtime) return &s;
  }
  return nullptr;
}

std::string SidecarDir(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("SHOAL_SIDECAR_DIR"); env && *env) return env;
  return SHOAL_SIDECAR_DIR;
}

std::string HostBinary(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("SHOAL_RUNTIME_HOST"); env && *env) return env;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "shoal";
}

}  // namespace

ModelRuntimes::ModelRuntimes(RuntimeProcessSettings settings)
    : settings_(std::move(settings)),
      pipelines_(std::make_unique<ocr::OcrRuntime>([this](const ModelSpec& stage) { return For(stage); })) {
  if (settings_.metrics) {
    deaths_ = &settings_.metrics->AddCounter("shoal_runtime_process_deaths_total",
                                             "Runtime processes that died or were killed, by runtime and why "
                                             "(exited, hung, protocol, memory).",
                                             {"runtime", "reason"});
  }
}

ModelRuntimes::~ModelRuntimes() = default;

bool RunsInItsOwnProcess(std::string_view runtime) { return FindSidecar(runtime) != nullptr; }

std::string_view RuntimeForModelType(std::string_view model_type) {
  return native::NativeRunsModelType(model_type) ? "native" : "pytorch";
}

Runtime* ModelRuntimes::For(const ModelSpec& spec) {
  if (spec.runtime == pipelines_->name()) {
    return spec.process == RuntimeProcess::kDefault || spec.process == RuntimeProcess::kWorker ? pipelines_.get()
                                                                                              : nullptr;
  }
  Runtime* local = FindRuntime(spec.runtime);
  const Sidecar* sidecar = FindSidecar(spec.runtime);
  if (!local && !sidecar) return nullptr;
  if (sidecar && spec.process == RuntimeProcess::kWorker) return nullptr;
  if (local && (spec.process == RuntimeProcess::kDefault || spec.process == RuntimeProcess::kWorker)) return local;
  // Out of process: a sidecar, or `shoal runtime-host` serving a built-in runtime.
  const std::string key = spec.process == RuntimeProcess::kOwn ? spec.runtime + "/" + spec.id : spec.runtime;
  std::lock_guard lock(mu_);
  auto& remote = remote_[key];
  if (!remote) {
    runtime_process::ProcessOptions o;
    o.name = key;
    o.runtime = spec.runtime;
    if (sidecar && sidecar->interpreter.empty()) {
      const std::string host = HostBinary(settings_.host_binary);
      o.command = {host.substr(0, host.rfind('/') + 1) + std::string(sidecar->script)};
    } else if (sidecar) {
      o.command = {Interpreter(*sidecar), SidecarDir(settings_.sidecar_dir) + "/" + std::string(sidecar->script)};
    } else {
      o.command = {HostBinary(settings_.host_binary), "runtime-host", "--runtime", spec.runtime};
    }
    o.health_every = settings_.health_every;
    o.health_timeout = settings_.health_timeout;
    o.memory_headroom_bytes = settings_.memory_headroom_bytes;
    o.deaths = deaths_;
    runtime_process::CallTimeouts timeouts;
    timeouts.call = settings_.call_timeout;
    remote = std::make_unique<runtime_process::RemoteRuntime>(
        spec.runtime, std::make_shared<runtime_process::RuntimeProcess>(std::move(o)), timeouts);
  }
  return remote.get();
}

}  // namespace shoal
