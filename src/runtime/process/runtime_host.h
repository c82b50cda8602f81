// RuntimeHost: an in-process Runtime served over the runtime protocol
// (protocol.h) — how `shoal runtime-host` puts the identity or the native
// runtime in a process of its own, the reference peer the conformance suite
// is checked against, and the model for runtimes written in other languages.
//
// Threading: each connection has a reader thread. It answers hello, health
// and memory itself, at once, so a health check is answered while batches
// run; load, unload, loras, check_lora and the batches go to a pool of
// `runners` threads, so batches of several executors run at once. Loaded
// models are shared by all connections, by handle; a batch holds its model
// (shared_ptr) until it ends, so unload never pulls weights from under it.
// stop closes the door: requests after it are refused, the ones under way
// finish (a Gate), then the reply is sent and Serve returns. A generation
// is under way from its request to its final update (the runtime's
// StreamingGenerator streams from its own threads); cancel is answered by
// the reader thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/gate.h"
#include "common/job_queue.h"
#include "runtime/runtime.h"

namespace shoal::runtime_process {

struct Request;  // protocol.h

class RuntimeHost {
 public:
  RuntimeHost(Runtime* runtime, int runners);
  ~RuntimeHost();
  RuntimeHost(const RuntimeHost&) = delete;
  RuntimeHost& operator=(const RuntimeHost&) = delete;

  // Serves the connected socket `fd` (taken) until the peer closes it or
  // asks to stop. Returns whether it was asked to stop.
  bool ServeConnection(int fd);

  // Listens on the Unix socket `path` and serves each connection on a
  // thread of its own until one asks to stop.
  Status Listen(const std::string& path);

 private:
  class Connection;
  // Runs one request on a runner thread; returns its final reply.
  std::string Handle(const Request& q, Connection& conn);
  // generate: starts the job on its model's StreamingGenerator; its updates
  // go to the peer as they come, and `held` is released with the last.
  void StartGeneration(const Request& q, const std::shared_ptr<Connection>& conn,
                       std::shared_ptr<Gate::Holder> held);
  // cancel: ends the generation `target` of this connection, if under way.
  void Cancel(uint64_t target, Connection& conn);

  Runtime* runtime_;
  std::mutex mu_;  // guards models_
  std::map<std::string, std::shared_ptr<Model>, std::less<>> models_;
  Gate requests_;  // the requests under way, drained by stop
  std::atomic<bool> stopping_{false};
  JobQueue<std::function<void()>> jobs_;
  std::vector<std::thread> runners_;
};

// A runtime process's main loop: serves `runtime` on the socket
// SHOAL_RUNTIME_FD names (how a worker starts it) or, when `listen` is set,
// on that socket path. Returns the process's exit code; `who` names it in
// the log.
int ServeRuntimeProcess(Runtime* runtime, int runners, const std::string& listen, const std::string& who);

}  // namespace shoal::runtime_process
