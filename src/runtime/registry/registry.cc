#include "runtime/registry/registry.h"

#include "runtime/identity/identity_runtime.h"
#include "runtime/native/native_runtime.h"

namespace shoal {

Runtime* FindRuntime(std::string_view name) {
  static IdentityRuntime identity;
  static NativeRuntime native;
  if (name == identity.name()) return &identity;
  if (name == native.name()) return &native;
  return nullptr;
}

}  // namespace shoal
