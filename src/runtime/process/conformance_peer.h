// The conformance suite's raw connection to a runtime under test
// (conformance.h): frames written and read as they are, so a check can send
// what a client never would and see exactly what comes back; and the
// verdicts the checks share. Internal to the suite (conformance*.cc).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/subprocess.h"
#include "runtime/process/conformance.h"
#include "runtime/process/frame.h"
#include "runtime/process/protocol.h"

namespace shoal::runtime_process::conformance {

// A final reply and the frame its views point into (kept in place).
struct Answer {
  std::string frame;
  Reply reply;
};

// One raw connection to the runtime under test.
class Peer {
 public:
  static Result<std::unique_ptr<Peer>> Open(const ConformanceTarget& target) {
    auto peer = std::make_unique<Peer>();
    if (!target.socket.empty()) {
      peer->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      if (target.socket.size() >= sizeof addr.sun_path) return InvalidInput("socket path too long");
      std::memcpy(addr.sun_path, target.socket.c_str(), target.socket.size() + 1);
      if (::connect(peer->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        return Internal("cannot connect to " + target.socket + ": " + std::strerror(errno));
      }
      return peer;
    }
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return Internal("socketpair failed");
    auto child = Subprocess::SpawnWithSocket(target.command, "", {"SHOAL_RUNTIME_FD=3"}, fds[1]);
    ::close(fds[1]);
    if (!child.ok()) {
      ::close(fds[0]);
      return child.status();
    }
    peer->fd_ = fds[0];
    peer->process_.emplace(std::move(child).value());
    return peer;
  }

  Peer() = default;
  ~Peer() {
    if (fd_ >= 0) ::close(fd_);
    if (process_) process_->Stop(SIGKILL, std::chrono::milliseconds(0));
  }

  Status Send(std::string_view frame) { return FrameWriter(fd_).Write(frame); }

  // The next frame, within `timeout`.
  Status Next(std::chrono::milliseconds timeout, std::string* frame) {
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (r == 0) return Status(Code::kDeadlineExceeded, "no reply within " + std::to_string(timeout.count()) + " ms");
    if (r < 0) return Internal(std::string("poll: ") + std::strerror(errno));
    return ReadFrame(fd_, frame);
  }

  // The final reply to `id`, collecting progress on the way.
  Result<std::unique_ptr<Answer>> Await(uint64_t id, std::chrono::milliseconds timeout,
                                        std::vector<double>* progress = nullptr) {
    while (true) {
      auto a = std::make_unique<Answer>();
      SHOAL_RETURN_IF_ERROR(Next(timeout, &a->frame));
      if (Status s = ReadReply(a->frame, &a->reply); !s.ok()) return Internal("not a reply: " + s.message());
      if (a->reply.id != id) return Internal("a reply to id " + std::to_string(a->reply.id) + " while waiting for " + std::to_string(id));
      if (a->reply.kind == Reply::Kind::kProgress) {
        if (progress) progress->push_back(a->reply.progress);
        continue;
      }
      return a;
    }
  }

  // Whether the runtime closes the connection within `timeout`.
  bool ClosesWithin(std::chrono::milliseconds timeout) {
    std::string frame;
    Status s = Next(timeout, &frame);
    return !s.ok() && s.code() != Code::kDeadlineExceeded;
  }

  // Whether the started process exits within `timeout` (true for a socket).
  bool ExitsWithin(std::chrono::milliseconds timeout) {
    if (!process_) return true;
    const auto until = SteadyClock::now() + timeout;
    while (process_->Running()) {
      if (SteadyClock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

 private:
  int fd_ = -1;
  std::optional<Subprocess> process_;
};

// Passed with what was seen, or failed with why.
inline CheckResult Pass(std::string name, std::string detail) { return {std::move(name), Status::Ok(), std::move(detail)}; }
inline CheckResult Fail(std::string name, std::string why) {
  return {std::move(name), Status(Code::kInternal, std::move(why)), ""};
}

inline std::string Describe(const Reply& r) {
  switch (r.kind) {
    case Reply::Kind::kOk: return "ok";
    case Reply::Kind::kError: return "error " + r.error.ToString();
    case Reply::Kind::kProgress: return "progress";
    case Reply::Kind::kChunk: return "chunk";
  }
  return "?";
}

// Expects an error reply with `code` (any code when kOk).
inline Status ExpectError(const Answer& a, Code code) {
  if (a.reply.kind != Reply::Kind::kError) return Internal("expected an error, got " + Describe(a.reply));
  if (code != Code::kOk && a.reply.error.code() != code) {
    return Internal("expected " + std::string(CodeName(code)) + ", got " + a.reply.error.ToString());
  }
  return Status::Ok();
}

inline Status ExpectOk(const Answer& a) {
  return a.reply.kind == Reply::Kind::kOk ? Status::Ok() : Internal("expected ok, got " + Describe(a.reply));
}

}  // namespace shoal::runtime_process::conformance
