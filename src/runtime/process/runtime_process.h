// RuntimeProcess: one runtime process under the worker's supervision.
//
// Started on demand (Connect): Shoal makes a socket pair, starts the
// runtime's command with one end as its descriptor 3 (SHOAL_RUNTIME_FD=3),
// says hello and checks the answer — the protocol version, and that the
// runtime is the one asked for. Then it is watched: a health call every
// `health_every` (a runtime that does not answer within `health_timeout`
// hangs), its resident memory against its limit (its memory at hello plus
// its models' and `memory_headroom_bytes`), and the connection itself (a
// runtime that sends garbage, answers an id nobody asked or lets a call run
// past its timeout breaks it). Any of these kills the process with a log
// line that says why and a count in `deaths`; calls in flight fail with
// NO_CAPACITY, so their items go back to the queue and run again (nothing
// accepted is lost, as when a worker is killed). The next Connect starts a
// fresh process: at once after a first death, after a backoff for the next
// ones in a row (0.5 s, doubling up to 30 s); until then Connect fails fast
// with NO_CAPACITY (the worker puts items back for 0.5 s each time). After
// `max_deaths_in_a_row` deaths without a successful start, Connect fails
// with MODEL_LOAD_FAILED until the backoff has passed again.
//
// Each start begins a new generation: models loaded in an earlier one are
// gone, and their owners load them again (remote_runtime.h). When its last
// model is released the process is asked to stop (it finishes what is under
// way) and, if it has not gone within 5 s, killed.
//
// Threading: thread-safe. `mu_` guards the process, the connection and the
// counts; it is never held across a call to the runtime, but is held across
// a start (fork, hello), so concurrent callers wait for one start. A
// watcher thread runs the health checks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "runtime/process/runtime_client.h"

namespace shoal::runtime_process {

struct ProcessOptions {
  std::string name;                   // for logs and metrics: "identity", "identity/m1"
  std::vector<std::string> command;   // argv of the runtime process
  std::string runtime;                // the name its hello must give
  std::chrono::milliseconds hello_timeout{30000};
  std::chrono::milliseconds health_every{1000};
  std::chrono::milliseconds health_timeout{10000};
  uint64_t memory_headroom_bytes = uint64_t{1} << 30;
  int max_deaths_in_a_row = 5;
  // Deaths by reason ("exited", "hung", "protocol", "memory"), labelled
  // runtime and reason; may be null.
  Family<Counter>* deaths = nullptr;
};

// A live connection and the generation of the process behind it.
struct Connected {
  std::shared_ptr<RuntimeClient> client;
  uint64_t generation = 0;
};

class RuntimeProcess {
 public:
  explicit RuntimeProcess(ProcessOptions options);
  ~RuntimeProcess();  // stops the process
  RuntimeProcess(const RuntimeProcess&) = delete;
  RuntimeProcess& operator=(const RuntimeProcess&) = delete;

  // The running process's connection, starting one if none runs.
  Result<Connected> Connect();
  // The running process's connection; none when no process runs.
  std::optional<Connected> Current() const;

  // Models account for the memory limit and keep the process running.
  void Holds(const std::string& handle, uint64_t bytes);
  // When the last is released, the process stops.
  void Releases(const std::string& handle);
  // Stops the process if no model holds it (after a call that needed a
  // process but no model: checking an adapter).
  void StopIfIdle();

  // Kills the process of `generation` now, if it still runs (a caller that
  // found it broken), counting why.
  void Kill(uint64_t generation, const std::string& reason, const std::string& why);

  const std::string& name() const { return options_.name; }
  RuntimeHello last_hello() const;  // empty before the first start
  pid_t pid() const;           // -1 when none runs
  uint64_t starts() const;     // processes started so far

 private:
  Status StartLocked();
  void KillLocked(const std::string& reason, const std::string& why);
  void KillBrokenLocked();  // the connection broke: why, and kill
  void StopLocked(std::unique_lock<std::mutex>& lock);
  void Watch();

  const ProcessOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the watcher's sleep
  std::optional<Subprocess> process_;           // guarded by mu_
  pid_t pid_ = -1;                              // guarded by mu_: the last started, for logs
  std::shared_ptr<RuntimeClient> client_;       // guarded by mu_
  RuntimeHello last_hello_;                     // guarded by mu_
  uint64_t generation_ = 0;                     // guarded by mu_
  uint64_t memory_at_hello_ = 0;                // guarded by mu_
  std::map<std::string, uint64_t> models_;      // guarded by mu_: handle → bytes
  int deaths_in_a_row_ = 0;                     // guarded by mu_
  SteadyClock::time_point next_start_{};        // guarded by mu_
  SteadyClock::time_point started_at_{};        // guarded by mu_
  Status last_death_;                           // guarded by mu_
  bool closing_ = false;                        // guarded by mu_
  std::thread watcher_;
};

// A process's resident memory, from /proc/PID/statm (0 if unreadable).
uint64_t ResidentBytesOf(pid_t pid);

}  // namespace shoal::runtime_process
