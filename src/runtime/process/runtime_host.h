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
// finish (a Gate), then the reply is sent and Serve returns.
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

  Runtime* runtime_;
  std::mutex mu_;  // guards models_
  std::map<std::string, std::shared_ptr<Model>, std::less<>> models_;
  Gate requests_;  // the requests under way, drained by stop
  std::atomic<bool> stopping_{false};
  JobQueue<std::function<void()>> jobs_;
  std::vector<std::thread> runners_;
};

}  // namespace shoal::runtime_process
