// Child processes (nats-server under `shoal up`, `shoal` itself in tests).
//
// A child runs in its own process group, so the terminal's Ctrl-C reaches
// only the parent, which drains before stopping its children; and it gets
// SIGTERM if the parent dies, so a crashed parent leaves no orphans.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace shoal {

class Subprocess {
 public:
  // Starts `argv[0]` (looked up on PATH) with stdout and stderr appended to
  // `log_path` (inherited when empty), in this process's environment plus
  // `env` ("NAME=value"; a name already set here keeps its value). A
  // command that cannot be run (not found, not executable) is an error
  // naming it, not a child that exits 127.
  static Result<Subprocess> Spawn(const std::vector<std::string>& argv, const std::string& log_path = "",
                                  const std::vector<std::string>& env = {});
  // The same, and the child gets `socket` as its descriptor 3 (a runtime
  // process's end of its socket pair). It learns of this process's death
  // from the socket closing, so it is not sent SIGTERM when the spawning
  // thread ends (PR_SET_PDEATHSIG follows the thread, not the process: a
  // runtime process started from a worker's executor would die with it).
  static Result<Subprocess> SpawnWithSocket(const std::vector<std::string>& argv, const std::string& log_path,
                                            const std::vector<std::string>& env, int socket);

  Subprocess(Subprocess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  Subprocess& operator=(Subprocess&& o) noexcept;
  ~Subprocess();  // Kill(SIGKILL) if still running

  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int sig);
  // Sends `sig`, waits up to `grace`, then SIGKILL. Returns the exit status.
  int Stop(int sig, std::chrono::milliseconds grace);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  static Result<Subprocess> Start(const std::vector<std::string>& argv, const std::string& log_path,
                                  const std::vector<std::string>& env, int socket);
  pid_t pid_ = -1;
  int status_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
Result<int> FreeLoopbackPort();

// Whether something accepts TCP connections on 127.0.0.1:port.
bool PortAcceptsConnections(int port);

}  // namespace shoal
