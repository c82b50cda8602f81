#include "gateway/payload_offloader.h"

#include "common/log.h"
#include "wire/work_message.h"

namespace shoal::gateway {
namespace {

// Puts of different requests overlap; two threads keep one slow upload from
// holding up every other large request.
constexpr int kThreads = 2;

}  // namespace

PayloadOffloader::PayloadOffloader(std::unique_ptr<queue::PayloadStore> store, size_t inline_limit,
                                   std::chrono::seconds orphan_age, std::chrono::seconds sweep_period)
    : store_(std::move(store)), inline_limit_(inline_limit), orphan_age_(orphan_age), sweep_period_(sweep_period) {
  for (int i = 0; i < kThreads; ++i) threads_.emplace_back([this, i] { Run(/*sweeper=*/i == 0); });
}

PayloadOffloader::~PayloadOffloader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::vector<size_t> PayloadOffloader::LargeItems(const PendingRequest& p) const {
  std::vector<size_t> large;
  for (size_t i = 0; i < p.request.items.size(); ++i) {
    if (!p.request.items[i].offloaded && p.request.items[i].payload.size() > inline_limit_) large.push_back(i);
  }
  return large;
}

bool PayloadOffloader::Needs(const PendingRequest& p) const { return !LargeItems(p).empty(); }

void PayloadOffloader::Enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void PayloadOffloader::Run(bool sweeper) {
  // The sweeper sweeps first at start: a restarted gateway cleans up after
  // its previous life.
  auto next_sweep = SteadyClock::now();
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      if (sweeper) {
        cv_.wait_until(lock, next_sweep, [&] { return stopping_ || !jobs_.empty(); });
      } else {
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      }
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else if (stopping_) {
        return;
      }
    }
    if (job) {
      job();
    } else if (sweeper && SteadyClock::now() >= next_sweep) {
      size_t deleted = 0;
      if (Status s = store_->DeleteOlderThan(orphan_age_, &deleted); !s.ok()) {
        spdlog::warn("payload sweep: {}", s.ToString());
      } else if (deleted > 0) {
        spdlog::info("payload sweep: deleted {} payload(s) older than {} s", deleted, orphan_age_.count());
      }
      next_sweep = SteadyClock::now() + sweep_period_;
    }
  }
}

void PayloadOffloader::DeleteKeys(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    if (Status s = store_->Delete(key); !s.ok()) {
      spdlog::warn("payload {} not deleted (the sweep will): {}", key, s.ToString());
    } else {
      deletes_.fetch_add(1);
    }
  }
}

void PayloadOffloader::Offload(std::shared_ptr<PendingRequest> p, EventLoop* loop,
                               std::function<void(Status)> done) {
  std::vector<size_t> large = LargeItems(*p);
  Enqueue([this, p = std::move(p), loop, done = std::move(done), large = std::move(large)]() mutable {
    std::vector<std::string> keys;
    Status status;
    for (size_t i : large) {
      std::string key = wire::PayloadKey(p->id, i);
      status = store_->Put(key, p->request.items[i].payload);
      if (!status.ok()) break;
      puts_.fetch_add(1);
      keys.push_back(std::move(key));
    }
    if (!status.ok()) {
      DeleteKeys(keys);
      spdlog::error("rid={} payload offload failed: {}", p->id, status.ToString());
      status = Status(Code::kInternal, "the payload store is unavailable: " + status.message());
    }
    loop->Post([this, p = std::move(p), done = std::move(done), large = std::move(large), keys = std::move(keys),
                status = std::move(status)]() mutable {
      if (p->finished) {  // ended while its payloads were uploading
        if (!keys.empty()) Enqueue([this, keys = std::move(keys)] { DeleteKeys(keys); });
        return;
      }
      if (status.ok()) {
        for (size_t i : large) p->request.items[i].offloaded = true;
      }
      done(status);
    });
  });
}

void PayloadOffloader::Release(const PendingRequest& p) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < p.request.items.size(); ++i) {
    if (p.request.items[i].offloaded) keys.push_back(wire::PayloadKey(p.id, i));
  }
  if (!keys.empty()) Enqueue([this, keys = std::move(keys)] { DeleteKeys(keys); });
}

}  // namespace shoal::gateway
