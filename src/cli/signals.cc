#include <signal.h>

#include <filesystem>

#include "cli/commands.h"

namespace shoal::cli {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error value, not a death
}

int WaitForStopSignal() {
  sigset_t set = StopSignals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

std::string DefaultModelsDir() {
  if (std::filesystem::is_directory("models")) return "models";
  return std::string(SHOAL_SOURCE_DIR) + "/models";
}

}  // namespace shoal::cli
