// shoal-llamacpp: the llamacpp runtime (GGUF models through llama.cpp) in a
// process of its own, served over the runtime protocol
// (docs/runtime-protocol.md) as `shoal runtime-host` serves the built-in
// runtimes: on the socket SHOAL_RUNTIME_FD names (how a worker starts it),
// or listening on `--listen PATH`.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "runtime/llamacpp/llamacpp_runtime.h"
#include "runtime/process/runtime_host.h"

int main(int argc, char** argv) {
  std::string listen;
  int runners = 4;
  std::string log_level = "info";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--listen" && i + 1 < argc) {
      listen = argv[++i];
    } else if (arg == "--runners" && i + 1 < argc) {
      runners = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--log-level" && i + 1 < argc) {
      log_level = argv[++i];
    } else {
      std::fprintf(stderr, "usage: shoal-llamacpp [--listen PATH] [--runners N] [--log-level LEVEL]\n");
      return 2;
    }
  }
  if (shoal::Status s = shoal::InitLogging(log_level); !s.ok()) {
    std::fprintf(stderr, "shoal-llamacpp: %s\n", s.ToString().c_str());
    return 2;
  }
  shoal::llamacpp::LlamaCppRuntime runtime;
  return shoal::runtime_process::ServeRuntimeProcess(&runtime, runners, listen, "shoal-llamacpp");
}
