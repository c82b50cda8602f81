// JobQueue: jobs for one thread, in the order they came. Close() wakes the
// thread to stop: Pop returns nothing once the queue is closed, jobs left
// or not.
//
// Threading: thread-safe; `mu_` guards the jobs and the closed flag.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace shoal {

template <class T>
class JobQueue {
 public:
  void Push(T job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  // Blocks for the next job; nothing once closed.
  std::optional<T> Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (closed_) return std::nullopt;
    T job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }

  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> jobs_;   // guarded by mu_
  bool closed_ = false;  // guarded by mu_
};

}  // namespace shoal
