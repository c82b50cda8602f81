// Gate: what a drain waits on (Seastar's gate, with threads). Work enters the
// gate and holds a Holder while it is under way; a drain closes the gate, so
// nothing new enters, and waits until the last holder is gone — woken by
// that holder's release, not by polling.
//
//   gateway   the HTTP server's requests, from read to written response
//   worker    its work items (worker/item_ticket.h), and its open pull
//             requests (queue/pull_subscriber.h)
//
// Threading: every method is thread-safe; `mu_` guards the count and the
// closed flag and is never held while calling out. A Holder may be released
// on any thread. The gate must outlive its holders.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

#include "common/clock.h"

namespace shoal {

class Gate {
 public:
  class Holder {
   public:
    Holder(Holder&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Holder& operator=(Holder&& other) noexcept {
      if (this != &other) {
        Release();
        gate_ = other.gate_;
        other.gate_ = nullptr;
      }
      return *this;
    }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    ~Holder() { Release(); }

    // Leaves the gate now (at most once).
    void Release() {
      if (gate_) gate_->Leave();
      gate_ = nullptr;
    }

   private:
    friend class Gate;
    explicit Holder(Gate* gate) : gate_(gate) {}
    Gate* gate_;
  };

  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // A place in the gate, or none once it is closed.
  std::optional<Holder> TryEnter() {
    std::lock_guard lock(mu_);
    if (closed_) return std::nullopt;
    ++count_;
    return Holder(this);
  }

  // No entries from now on; holders already in stay until they leave.
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }

  // Blocks until no holder is left or `deadline` passes; true when none is.
  bool WaitEmpty(SteadyClock::time_point deadline) {
    std::unique_lock lock(mu_);
    return empty_.wait_until(lock, deadline, [&] { return count_ == 0; });
  }

  size_t count() const {
    std::lock_guard lock(mu_);
    return count_;
  }
  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }

 private:
  void Leave() {
    std::lock_guard lock(mu_);
    if (--count_ == 0) empty_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable empty_;
  size_t count_ = 0;     // guarded by mu_
  bool closed_ = false;  // guarded by mu_
};

}  // namespace shoal
