#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include "queue/loop_connection.h"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "common/log.h"

namespace shoal::queue {
namespace {

namespace asio = boost::asio;

// One per connection. It keeps itself alive (`self`) until cnats detaches
// it, and every wait it arms holds a reference, so a completion that was
// already queued when the connection went away still finds it. Everything
// but the two atomics is touched on the loop thread only.
struct Adapter : std::enable_shared_from_this<Adapter> {
  std::shared_ptr<Adapter> self;
  EventLoop* loop = nullptr;
  natsConnection* nc = nullptr;
  std::function<void()> on_readable;
  std::atomic<bool> want_read{false};
  std::atomic<bool> want_write{false};
  std::unique_ptr<asio::posix::stream_descriptor> socket;
  bool read_armed = false;
  bool write_armed = false;
  uint64_t generation = 0;  // bumped on (re)attach so stale waits do nothing

  void Arm() {
    if (!socket) return;
    if (want_read && !read_armed) {
      read_armed = true;
      socket->async_wait(asio::posix::stream_descriptor::wait_read,
                         [a = shared_from_this(), gen = generation](const boost::system::error_code& ec) {
                           if (gen != a->generation) return;
                           a->read_armed = false;
                           if (ec || !a->want_read) return;
                           natsConnection_ProcessReadEvent(a->nc);
                           if (a->on_readable) a->on_readable();
                           a->Arm();
                         });
    }
    if (want_write && !write_armed) {
      // Usually writable at once: write now rather than after a poll.
      natsConnection_ProcessWriteEvent(nc);
      if (want_write && !write_armed && socket) {
        write_armed = true;
        socket->async_wait(asio::posix::stream_descriptor::wait_write,
                           [a = shared_from_this(), gen = generation](const boost::system::error_code& ec) {
                             if (gen != a->generation) return;
                             a->write_armed = false;
                             if (ec) return;
                             a->Arm();
                           });
      }
    }
  }

  void Drop() {
    ++generation;
    if (socket) {
      boost::system::error_code ec;
      socket->cancel(ec);
      socket->release();  // cnats owns the descriptor: never close it here
      socket.reset();
    }
    read_armed = write_armed = false;
  }
};

struct AdapterSeed {
  EventLoop* loop;
  std::function<void()> on_readable;
};

natsStatus OnAttach(void** user_data, void* loop_ptr, natsConnection* nc, natsSock fd) {
  auto* seed = static_cast<AdapterSeed*>(loop_ptr);
  Adapter* a = static_cast<Adapter*>(*user_data);
  if (a == nullptr) {  // first connect (not a reconnect)
    auto owned = std::make_shared<Adapter>();
    owned->self = owned;
    a = owned.get();
    a->loop = seed->loop;
    a->nc = nc;
    a->on_readable = seed->on_readable;
    *user_data = a;
  }
  // cnats expects an attached socket to be polled for reads from now on; it
  // calls OnRead only to stop and restart that later.
  a->want_read = true;
  a->loop->Post([a = a->shared_from_this(), fd] {
    a->Drop();
    // By the time this runs cnats may have closed the socket again (a
    // reconnect attempt that failed): then there is nothing to poll, and it
    // attaches the next one. Never throw on the loop.
    auto socket = std::make_unique<asio::posix::stream_descriptor>(a->loop->context());
    boost::system::error_code ec;
    socket->assign(fd, ec);
    if (ec) {
      spdlog::debug("nats: socket {} gone before it was attached: {}", fd, ec.message());
      return;
    }
    a->socket = std::move(socket);
    a->Arm();
  });
  return NATS_OK;
}

natsStatus OnRead(void* user_data, bool add) {
  auto* a = static_cast<Adapter*>(user_data);
  a->want_read = add;
  if (add) a->loop->Post([a = a->shared_from_this()] { a->Arm(); });
  return NATS_OK;
}

natsStatus OnWrite(void* user_data, bool add) {
  auto* a = static_cast<Adapter*>(user_data);
  const bool was = a->want_write.exchange(add);
  if (add && !was) a->loop->Post([a = a->shared_from_this()] { a->Arm(); });
  return NATS_OK;
}

natsStatus OnDetach(void* user_data) {
  auto* a = static_cast<Adapter*>(user_data);
  a->want_read = false;
  a->want_write = false;
  a->loop->Post([a = a->shared_from_this()] {
    a->Drop();
    a->self.reset();  // freed when the last queued wait has run
  });
  return NATS_OK;
}

}  // namespace

Result<ConnectionPtr> ConnectOnLoop(const ConnectOptions& options, EventLoop* loop,
                                    std::function<void()> on_readable) {
  // The seed carries the loop and callback into OnAttach. cnats may attach
  // late or not at all, so it is kept for the process: one small struct per
  // connection, and connections are made at start.
  auto* seed = new AdapterSeed{loop, std::move(on_readable)};
  ConnectOptions o = options;
  o.event_loop = {seed, &OnAttach, &OnRead, &OnWrite, &OnDetach};
  return Connect(o);
}

}  // namespace shoal::queue
