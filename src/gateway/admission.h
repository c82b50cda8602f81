// Admission control: a bound on the requests a gateway has in flight
// (`shoal gateway --max-in-flight`), as Envoy's overload manager bounds
// active requests. Past the bound a request is answered 503 OVERLOADED with
// Retry-After at once — before authentication, parsing or publishing, so an
// overloaded gateway spends next to nothing on it — instead of queueing
// without bound in memory and answering everyone late.
//
// A request holds a Ticket from admission until its response is handed to
// the connection (the last part, for a streamed one); the ticket is
// released then, or when it is destroyed, whichever is first (RAII: a
// request dropped on any path gives its place back).
//
// Threading: Admission is thread-safe (one atomic counter, shared by the
// lanes). A Ticket is released once; the http::Responder from Admitted() is called
// by one thread at a time, as every http::Responder is.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>

#include "http/http.h"

namespace shoal::gateway {

class Admission {
 public:
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket() { Release(); }

    void Release() {
      if (owner_) owner_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
      owner_ = nullptr;
    }

   private:
    friend class Admission;
    explicit Ticket(Admission* owner) : owner_(owner) {}
    Admission* owner_;
  };

  // `limit` 0: unbounded (tickets are still counted).
  explicit Admission(size_t limit) : limit_(limit) {}

  // A ticket, or nothing when `limit` requests are in flight already.
  std::optional<Ticket> TryAdmit();
  size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  std::atomic<size_t> in_flight_{0};
};

// `respond`, releasing `ticket` once the response's last part is passed on
// (or when the returned http::Responder is destroyed without it).
http::Responder Admitted(http::Responder respond, Admission::Ticket ticket);

}  // namespace shoal::gateway
