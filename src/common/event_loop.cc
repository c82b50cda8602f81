#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include "common/event_loop.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>

namespace shoal {

EventLoop::EventLoop() : context_(std::make_unique<boost::asio::io_context>(1)) {}

EventLoop::~EventLoop() { Stop(); }

void EventLoop::Start() {
  thread_ = std::thread([this] {
    auto guard = boost::asio::make_work_guard(*context_);  // run until Stop
    context_->run();
  });
}

void EventLoop::Stop() {
  if (!thread_.joinable()) return;
  // Queued behind what is already posted, so that runs first (e.g. a closed
  // NATS connection's cleanup).
  boost::asio::post(*context_, [ctx = context_.get()] { ctx->stop(); });
  thread_.join();
}

void EventLoop::Post(std::function<void()> fn) { boost::asio::post(*context_, std::move(fn)); }

namespace {

struct Repeater : std::enable_shared_from_this<Repeater> {
  Repeater(boost::asio::io_context& ctx, std::chrono::milliseconds period, std::function<void()> fn)
      : timer(ctx), period(period), fn(std::move(fn)) {}
  void Schedule() {
    timer.expires_after(period);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      self->fn();
      self->Schedule();
    });
  }
  boost::asio::steady_timer timer;
  std::chrono::milliseconds period;
  std::function<void()> fn;
};

}  // namespace

void EventLoop::Every(std::chrono::milliseconds period, std::function<void()> fn) {
  Post([this, period, fn = std::move(fn)]() mutable {
    std::make_shared<Repeater>(*context_, period, std::move(fn))->Schedule();
  });
}

void EventLoop::RunAndWait(const std::function<void()>& fn) {
  std::promise<void> done;
  Post([&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

}  // namespace shoal
