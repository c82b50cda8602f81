// EventLoop: one thread running one boost::asio::io_context.
//
// Shoal's hot paths are built as lanes that each own a loop (Seastar-style,
// shared nothing): a gateway I/O thread serves its HTTP connections *and* its
// own NATS connection on one loop, so a request never changes threads between
// arriving and being answered. Context switches, not computation, were the
// main cost of the serving plane on small machines.
//
// Threading: Post is safe from any thread; context() is for code that runs on
// (or schedules work onto) this loop.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace boost::asio {
class io_context;
}

namespace shoal {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();  // Stop()

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void Start();
  // Runs what was posted before this call, then stops and joins the thread.
  // Waits not yet completed (timers, sockets) are dropped.
  void Stop();

  void Post(std::function<void()> fn);
  // Calls `fn` on the loop every `period` until the loop stops.
  void Every(std::chrono::milliseconds period, std::function<void()> fn);
  // Runs `fn` on the loop and waits for it (not from the loop's own thread).
  void RunAndWait(const std::function<void()>& fn);
  boost::asio::io_context& context() { return *context_; }

 private:
  std::unique_ptr<boost::asio::io_context> context_;
  std::thread thread_;
};

}  // namespace shoal
