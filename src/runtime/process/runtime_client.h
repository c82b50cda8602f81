// RuntimeClient: Shoal's end of one connection to a runtime process
// (protocol.h). Calls are pipelined: any thread may Call at any time, and
// one reader thread hands each reply to the call with its id.
//
// A connection breaks when the peer closes it, sends a frame that is not a
// reply, answers an id nobody asked, or a call outlives its timeout (the
// runtime is taken to hang). Every call then in flight, and every later
// one, fails with NO_CAPACITY ("the runtime process is gone": the worker
// puts the items back on the queue), and `on_broken` is told why, once —
// the supervisor (runtime_process.h) kills and replaces the process.
//
// Threading: thread-safe. `mu_` guards the calls in flight and the broken
// state; replies are matched on the reader thread, which never holds `mu_`
// while reading the socket.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "runtime/process/frame.h"
#include "runtime/process/protocol.h"

namespace shoal::runtime_process {

// A final "ok" reply: the frame, kept, and where its result map lies in it.
struct OkReply {
  std::string frame;
  size_t at = 0, size = 0;
  std::string_view ok() const { return std::string_view(frame).substr(at, size); }
};

class RuntimeClient {
 public:
  // Takes the connected socket `fd` and says hello. INVALID_INPUT when the
  // runtime speaks no version Shoal speaks or its hello is malformed;
  // NO_CAPACITY when it does not answer within `timeout`.
  static Result<std::unique_ptr<RuntimeClient>> Open(int fd, std::chrono::milliseconds timeout,
                                                     std::function<void(const Status&)> on_broken = {});
  ~RuntimeClient();  // closes the socket; calls in flight fail

  const RuntimeHello& hello() const { return hello_; }

  // The id the next request must carry.
  uint64_t NextId();
  // Sends `request` (made with id `id`) and waits for its final reply.
  // `progress` is called on the reader thread for each progress reply.
  Result<OkReply> Call(uint64_t id, std::string request, std::chrono::milliseconds timeout,
                       std::function<void(double)> progress = {});
  // Sends `request` (made with id `id`) without waiting: `on_chunk` gets
  // each chunk reply's map (generation), then `on_end` the final reply — or
  // NO_CAPACITY when the connection breaks first. Both run on the reader
  // thread (on_end may run on the thread that breaks the connection) and
  // must not call into this client synchronously. No timeout: a generation
  // may run long, and the supervisor's health checks catch a hung runtime.
  void Start(uint64_t id, std::string request, std::function<void(std::string_view)> on_chunk,
             std::function<void(Result<OkReply>)> on_end);

  bool broken() const;
  // Calls sent and not yet answered.
  size_t calls_in_flight() const;
  // Why it broke (OK while it works).
  Status why_broken() const;
  // Breaks the connection now (a supervisor that killed the process).
  void Break(const Status& why);

 private:
  struct Pending {
    std::function<void(double)> progress;
    std::function<void(std::string_view)> on_chunk;  // Start's
    std::function<void(Result<OkReply>)> on_end;     // Start's: set, nobody waits in Call
    bool done = false;
    Status status;
    OkReply reply;
  };

  RuntimeClient(int fd, std::function<void(const Status&)> on_broken);
  void ReadLoop();

  const int fd_;
  FrameWriter writer_;
  std::function<void(const Status&)> on_broken_;
  RuntimeHello hello_;

  mutable std::mutex mu_;
  std::condition_variable done_;
  uint64_t next_id_ = 1;                                   // guarded by mu_
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;   // guarded by mu_
  Status broken_;                                          // guarded by mu_; ok while it works
  std::thread reader_;
};

// The status every call gets once the process is gone: NO_CAPACITY.
Status RuntimeGone(const std::string& why);

}  // namespace shoal::runtime_process
