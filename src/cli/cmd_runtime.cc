// shoal runtime-host: serves a built-in runtime (identity, native, upstream) over the
// runtime protocol — what the worker starts for a model whose profile says
// `process: shared` or `own`. With SHOAL_RUNTIME_FD set it serves that
// inherited socket (the worker's way); with --listen it serves a socket path.
//
// shoal runtime-check SOCKET|COMMAND...: the protocol's conformance suite
// against a runtime that listens on SOCKET, or that COMMAND starts (given
// its socket as descriptor 3). --profile names the model the load and batch
// checks use. Prints a line per check; exits 1 if any failed.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "admin/model_directory.h"
#include "cli/commands.h"
#include "common/log.h"
#include "runtime/process/conformance.h"
#include "runtime/process/runtime_host.h"
#include "runtime/registry/registry.h"

namespace shoal::cli {
namespace {

struct HostFlags {
  std::string runtime;
  std::string listen;
  int runners = 4;
};

int RunHost(const HostFlags& flags) {
  Runtime* runtime = FindRuntime(flags.runtime);
  if (!runtime) {
    spdlog::error("runtime-host: no runtime '{}' in this build", flags.runtime);
    return 2;
  }
  return runtime_process::ServeRuntimeProcess(runtime, flags.runners, flags.listen, "runtime-host");
}

struct CheckFlags {
  std::vector<std::string> target;
  std::string profile;
  int timeout_s = 30;
};

int RunCheck(const CheckFlags& flags) {
  runtime_process::ConformanceTarget target;
  struct stat st{};
  if (flags.target.size() == 1 && ::stat(flags.target[0].c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    target.socket = flags.target[0];
  } else {
    target.command = flags.target;
  }
  runtime_process::ConformanceOptions options;
  options.timeout = std::chrono::seconds(flags.timeout_s);
  if (!flags.profile.empty()) {
    auto spec = admin::SpecFromPath(flags.profile);
    auto config = spec.ok() ? ModelConfig::FromSpec(*spec) : Result<ModelConfig>(spec.status());
    if (!config.ok()) {
      std::fprintf(stderr, "runtime-check: %s: %s\n", flags.profile.c_str(), config.status().ToString().c_str());
      return 2;
    }
    options.model = *config;
  }
  int failed = 0;
  runtime_process::RunConformance(target, options, [&](const runtime_process::CheckResult& r) {
    const char* mark = r.skipped ? "skip" : r.status.ok() ? "ok  " : "FAIL";
    if (!r.skipped && !r.status.ok()) ++failed;
    std::printf("%s %s: %s\n", mark, r.name.c_str(), r.status.ok() ? r.detail.c_str() : r.status.message().c_str());
    std::fflush(stdout);
  });
  if (failed) {
    std::printf("%d checks failed\n", failed);
  } else {
    std::printf("every check passed\n");
  }
  return failed ? 1 : 0;
}

}  // namespace

Subcommand AddRuntimeHost(CLI::App& app) {
  auto* sub = app.add_subcommand("runtime-host", "Serve a built-in runtime over the runtime protocol (a runtime process)");
  auto flags = std::make_shared<HostFlags>();
  sub->add_option("--runtime", flags->runtime, "identity, native or upstream")->required();
  sub->add_option("--listen", flags->listen, "serve this Unix socket path (else the inherited SHOAL_RUNTIME_FD)");
  sub->add_option("--runners", flags->runners, "requests run at once")->capture_default_str();
  return {sub, [flags] { return RunHost(*flags); }};
}

Subcommand AddRuntimeCheck(CLI::App& app) {
  auto* sub = app.add_subcommand("runtime-check", "Check a runtime process against the runtime protocol");
  auto flags = std::make_shared<CheckFlags>();
  sub->add_option("target", flags->target, "a Unix socket the runtime listens on, or the command that starts it")
      ->required();
  sub->add_option("--profile", flags->profile, "a model profile for the load and batch checks");
  sub->add_option("--timeout-s", flags->timeout_s, "seconds to wait for each reply")->capture_default_str();
  sub->allow_extras(false);
  return {sub, [flags] { return RunCheck(*flags); }};
}

}  // namespace shoal::cli
