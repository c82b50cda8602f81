// The runtimes of this process, found by the name a profile gives
// (`runtime: native`). A runtime joins only when it implements this
// process's version of the runtime contract (runtime.h kRuntimeApiVersion):
// one written against another version is refused with a message that says
// which it speaks.
//
// Threading: Register before use; Find from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

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

}  // namespace shoal
