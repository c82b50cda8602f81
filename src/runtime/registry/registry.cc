#include "runtime/registry/registry.h"

#include "common/log.h"
#include "runtime/identity/identity_runtime.h"
#include "runtime/native/native_runtime.h"

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
    std::unique_ptr<Runtime> builtins[] = {std::make_unique<IdentityRuntime>(), std::make_unique<NativeRuntime>()};
    for (auto& runtime : builtins) {
      if (Status s = r.Register(std::move(runtime)); !s.ok()) spdlog::error("runtimes: {}", s.message());
    }
    return r;
  }();
  return registry;
}

Runtime* FindRuntime(std::string_view name) { return BuiltInRuntimes().Find(name); }

}  // namespace shoal
