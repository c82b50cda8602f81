#include "runtime/process/runtime_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "common/log.h"

namespace shoal::runtime_process {

Status RuntimeGone(const std::string& why) {
  return Status(Code::kNoCapacity, "the runtime process is gone: " + why);
}

RuntimeClient::RuntimeClient(int fd, std::function<void(const Status&)> on_broken)
    : fd_(fd), writer_(fd), on_broken_(std::move(on_broken)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

RuntimeClient::~RuntimeClient() {
  Break(Status(Code::kNoCapacity, "the connection was closed"));
  reader_.join();
  ::close(fd_);
}

Result<std::unique_ptr<RuntimeClient>> RuntimeClient::Open(int fd, std::chrono::milliseconds timeout,
                                                           std::function<void(const Status&)> on_broken) {
  std::unique_ptr<RuntimeClient> c(new RuntimeClient(fd, std::move(on_broken)));
  const uint64_t id = c->NextId();
  // A runtime that speaks none of the versions offered answers an error.
  auto reply = c->Call(id, HelloRequest(id), timeout);
  if (!reply.ok()) return reply.status();
  if (Status s = ReadHello(reply->ok(), &c->hello_); !s.ok()) {
    return InvalidInput("the runtime's hello is malformed: " + s.message());
  }
  if (c->hello_.protocol != kProtocolVersion) {
    return InvalidInput("the runtime answered with protocol version " + std::to_string(c->hello_.protocol) +
                        "; Shoal speaks version " + std::to_string(kProtocolVersion));
  }
  return c;
}

uint64_t RuntimeClient::NextId() {
  std::lock_guard lock(mu_);
  return next_id_++;
}

bool RuntimeClient::broken() const {
  std::lock_guard lock(mu_);
  return !broken_.ok();
}

size_t RuntimeClient::calls_in_flight() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

Status RuntimeClient::why_broken() const {
  std::lock_guard lock(mu_);
  return broken_;
}

void RuntimeClient::Break(const Status& why) {
  bool first = false;
  std::vector<std::shared_ptr<Pending>> started;  // Start's calls, told outside the lock
  {
    std::lock_guard lock(mu_);
    if (broken_.ok()) {
      broken_ = why.ok() ? Internal("broken") : why;
      first = true;
      for (auto& [id, p] : pending_) {
        p->done = true;
        p->status = RuntimeGone(broken_.message());
        if (p->on_end) started.push_back(p);
      }
      pending_.clear();
    }
  }
  if (!first) return;
  done_.notify_all();
  for (const auto& p : started) p->on_end(p->status);
  ::shutdown(fd_, SHUT_RDWR);  // wakes the reader
  if (on_broken_) on_broken_(why);
}

Result<OkReply> RuntimeClient::Call(uint64_t id, std::string request, std::chrono::milliseconds timeout,
                                    std::function<void(double)> progress) {
  auto p = std::make_shared<Pending>();
  p->progress = std::move(progress);
  {
    std::lock_guard lock(mu_);
    if (!broken_.ok()) return RuntimeGone(broken_.message());
    pending_.emplace(id, p);
  }
  if (Status s = writer_.Write(request); !s.ok()) {
    Break(s);
    return RuntimeGone(s.message());
  }
  std::unique_lock lock(mu_);
  if (!done_.wait_for(lock, timeout, [&] { return p->done; })) {
    lock.unlock();
    const std::string why = "no answer to a call within " + std::to_string(timeout.count()) + " ms";
    Break(Status(Code::kDeadlineExceeded, why));
    return RuntimeGone(why);
  }
  if (!p->status.ok()) return p->status;
  return std::move(p->reply);
}

void RuntimeClient::Start(uint64_t id, std::string request, std::function<void(std::string_view)> on_chunk,
                          std::function<void(Result<OkReply>)> on_end) {
  auto p = std::make_shared<Pending>();
  p->on_chunk = std::move(on_chunk);
  p->on_end = std::move(on_end);
  Status gone;
  {
    std::lock_guard lock(mu_);
    if (broken_.ok()) {
      pending_.emplace(id, p);
    } else {
      gone = RuntimeGone(broken_.message());
    }
  }
  if (!gone.ok()) {
    p->on_end(gone);
    return;
  }
  if (Status s = writer_.Write(request); !s.ok()) Break(s);  // tells on_end
}

void RuntimeClient::ReadLoop() {
  std::string frame;
  while (true) {
    if (Status s = ReadFrame(fd_, &frame); !s.ok()) {
      Break(s);
      return;
    }
    Reply r;
    if (Status s = ReadReply(frame, &r); !s.ok()) {
      Break(Internal("the runtime sent a frame that is not a reply: " + s.message()));
      return;
    }
    std::shared_ptr<Pending> p;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(r.id);
      if (it == pending_.end()) {
        if (!broken_.ok()) return;
        // An id nobody asked (or already answered): the runtime is confused.
        p = nullptr;
      } else {
        p = it->second;
        if (r.kind == Reply::Kind::kOk || r.kind == Reply::Kind::kError) pending_.erase(it);
      }
    }
    if (!p) {
      Break(Internal("the runtime answered id " + std::to_string(r.id) + ", which no call is waiting for"));
      return;
    }
    if (r.kind == Reply::Kind::kProgress) {
      if (p->progress) p->progress(r.progress);
      continue;
    }
    if (r.kind == Reply::Kind::kChunk) {
      if (!p->on_chunk) {
        Break(Internal("the runtime sent a chunk for request " + std::to_string(r.id) + ", which generates nothing"));
        return;
      }
      p->on_chunk(r.chunk);
      continue;
    }
    if (p->on_end) {  // Start's call: nobody waits
      if (r.kind == Reply::Kind::kError) {
        p->on_end(r.error);
      } else {
        OkReply reply;
        reply.at = static_cast<size_t>(r.ok.data() - frame.data());
        reply.size = r.ok.size();
        reply.frame = std::move(frame);
        frame = std::string();
        p->on_end(std::move(reply));
      }
      continue;
    }
    {
      std::lock_guard lock(mu_);
      p->done = true;
      if (r.kind == Reply::Kind::kError) {
        p->status = r.error;
      } else {
        p->reply.at = static_cast<size_t>(r.ok.data() - frame.data());
        p->reply.size = r.ok.size();
        p->reply.frame = std::move(frame);
        frame = std::string();
      }
    }
    done_.notify_all();
  }
}

}  // namespace shoal::runtime_process
