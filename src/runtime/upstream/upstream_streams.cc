#include "runtime/upstream/upstream_streams.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/log.h"
#include "runtime/upstream/openai_wire.h"
#include "runtime/upstream/sse_reader.h"

namespace shoal::upstream {
namespace {

using Clock = std::chrono::steady_clock;

// At most this much of a refusal's body is kept for its message.
constexpr size_t kErrorBodyBytes = 4096;
// How often the loop looks for streams that went silent.
constexpr auto kSweepEvery = std::chrono::milliseconds(100);

GenerationUpdate Final(Status status, std::string finish) {
  GenerationUpdate u;
  u.final = true;
  u.status = std::move(status);
  u.finish_reason = std::move(finish);
  return u;
}

}  // namespace

struct UpstreamStreams::Transfer {
  Transfer(uint64_t h, bool is_chat, Sink s, GenerationCall c)
      : handle(h), chat(is_chat), sink(std::move(s)), call(std::move(c)),
        reader([this](std::string_view data) { return OnEvent(data); }) {}

  Status OnEvent(std::string_view data) {
    if (done) return Status::Ok();  // nothing counts after [DONE]
    StreamEvent e;
    SHOAL_RETURN_IF_ERROR(ReadStreamEvent(data, chat, &e));
    done = e.done;
    if (e.has_usage) {
      prompt_tokens = e.prompt_tokens;
      completion_tokens = e.completion_tokens;
    }
    if (!e.finish_reason.empty()) finish = e.finish_reason;
    if (!e.text.empty()) {
      GenerationUpdate u;
      u.text = std::move(e.text);
      sink(std::move(u));
    }
    return Status::Ok();
  }

  static size_t OnBytes(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    t->last_data = Clock::now();
    if (t->status == 0) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status < 200 || t->status >= 300) {  // a refusal: keep its body for the message
      t->error_body.append(data, std::min(size * n, kErrorBodyBytes - std::min(kErrorBodyBytes, t->error_body.size())));
      return size * n;
    }
    t->failed = t->reader.Feed(std::string_view(data, size * n));
    return t->failed.ok() ? size * n : 0;  // 0 ends the transfer (CURLE_WRITE_ERROR)
  }

  const uint64_t handle;
  const bool chat;
  Sink sink;
  GenerationCall call;
  SseReader reader;
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  long status = 0;  // HTTP status, once the first bytes are in
  std::string error_body;
  Status failed;        // what the write callback found wrong
  std::string finish;   // the upstream's finish_reason
  bool done = false;    // "[DONE]" came
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  Clock::time_point last_data = Clock::now();
};

UpstreamStreams::UpstreamStreams(Endpoint endpoint, uint32_t max_sequences)
    : endpoint_(std::move(endpoint)),
      max_sequences_(max_sequences),
      multi_(curl_multi_init()),
      epoll_(epoll_create1(EPOLL_CLOEXEC)),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  auto* multi = static_cast<CURLM*>(multi_);
  curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &UpstreamStreams::OnSocket);
  curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &UpstreamStreams::OnTimer);
  curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = wake_;
  if (epoll_ < 0 || wake_ < 0 || epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &e) != 0) {
    spdlog::error("upstream {}: no epoll or eventfd for the stream loop: {}", endpoint_.options.base_url,
                  std::strerror(errno));
  }
  thread_ = std::thread([this] { Loop(); });
}

UpstreamStreams::~UpstreamStreams() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  Wake();
  thread_.join();
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
  close(wake_);
  close(epoll_);
}

void UpstreamStreams::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_, &one, sizeof(one));  // EAGAIN: already woken
}

int UpstreamStreams::OnSocket(void* /*easy*/, int fd, int what, void* self, void* socket_data) {
  auto* streams = static_cast<UpstreamStreams*>(self);
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(streams->epoll_, EPOLL_CTL_DEL, fd, nullptr);
    return 0;
  }
  epoll_event e{};
  e.events = (what & CURL_POLL_IN ? uint32_t{EPOLLIN} : 0u) | (what & CURL_POLL_OUT ? uint32_t{EPOLLOUT} : 0u);
  e.data.fd = fd;
  // libcurl keeps `socket_data` per socket until it says REMOVE: set, the
  // socket is in the epoll set already.
  if (socket_data) return epoll_ctl(streams->epoll_, EPOLL_CTL_MOD, fd, &e) == 0 ? 0 : -1;
  if (epoll_ctl(streams->epoll_, EPOLL_CTL_ADD, fd, &e) != 0) return -1;
  curl_multi_assign(static_cast<CURLM*>(streams->multi_), fd, streams);
  return 0;
}

int UpstreamStreams::OnTimer(void* /*multi*/, long timeout_ms, void* self) {
  static_cast<UpstreamStreams*>(self)->curl_deadline_ =
      timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

uint64_t UpstreamStreams::Start(GenerationJob job, Sink sink) {
  const uint64_t handle = next_handle_.fetch_add(1);
  auto call = GenerationRequest(endpoint_.options.model, job);
  if (call.ok() && (epoll_ < 0 || wake_ < 0)) {
    call = Internal("upstream: the stream loop has no epoll or eventfd (see the worker's log)");
  }
  if (!call.ok()) {
    sink(Final(call.status(), ""));
    return handle;
  }
  auto t = std::make_unique<Transfer>(handle, job.chat, std::move(sink), std::move(call).value());
  {
    std::lock_guard lock(mu_);
    if (!stop_) {
      starting_.push_back(std::move(t));
    }
  }
  if (t) {  // stopping: refused as the contract says
    t->sink(Final(Status(Code::kNoCapacity, "the upstream model is being unloaded"), ""));
    return handle;
  }
  Wake();
  return handle;
}

void UpstreamStreams::Cancel(uint64_t handle) {
  {
    std::lock_guard lock(mu_);
    cancelling_.push_back(handle);
  }
  Wake();
}

void UpstreamStreams::Begin(std::unique_ptr<Transfer> t) {
  t->curl = curl_easy_init();
  if (!t->curl) return t->sink(Final(Internal("upstream: curl_easy_init failed"), ""));
  PrepareRequest(t->curl, endpoint_, t->call.path, t->call.body, &t->headers);
  curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, &Transfer::OnBytes);
  curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(t->curl, CURLOPT_PRIVATE, t.get());
  t->last_data = Clock::now();
  curl_multi_add_handle(static_cast<CURLM*>(multi_), t->curl);
  running_.emplace(t->handle, std::move(t));
}

void UpstreamStreams::End(uint64_t handle, Status status, std::string finish) {
  auto it = running_.find(handle);
  if (it == running_.end()) return;
  std::unique_ptr<Transfer> t = std::move(it->second);
  running_.erase(it);
  curl_multi_remove_handle(static_cast<CURLM*>(multi_), t->curl);
  curl_easy_cleanup(t->curl);
  curl_slist_free_all(t->headers);
  GenerationUpdate u = Final(std::move(status), std::move(finish));
  u.prompt_tokens = t->prompt_tokens;
  u.completion_tokens = t->completion_tokens;
  t->sink(std::move(u));
}

void UpstreamStreams::Sweep() {
  const auto now = Clock::now();
  const auto limit = std::chrono::milliseconds(endpoint_.options.timeout_ms);
  std::vector<uint64_t> silent;
  for (const auto& [handle, t] : running_) {
    if (now - t->last_data > limit) silent.push_back(handle);
  }
  for (uint64_t h : silent) {
    End(h, Status(Code::kInferenceError, "upstream " + endpoint_.options.base_url + " sent nothing for " +
                                             std::to_string(endpoint_.options.timeout_ms) + " ms"),
        "");
  }
}

void UpstreamStreams::Finished() {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(static_cast<CURLM*>(multi_), &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
    const CURLcode rc = m->data.result;
    const std::string where = "upstream " + endpoint_.options.base_url + t->call.path;
    if (t->status == 0) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (rc == CURLE_WRITE_ERROR && !t->failed.ok()) {
      End(t->handle, t->failed, "");
    } else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
      spdlog::warn("{}: {}; the request goes back to the queue", where, curl_easy_strerror(rc));
      End(t->handle, Status(Code::kNoCapacity, where + ": " + curl_easy_strerror(rc)), "");
    } else if (rc != CURLE_OK) {
      End(t->handle, Status(Code::kInferenceError, where + ": " + curl_easy_strerror(rc)), "");
    } else if (t->status < 200 || t->status >= 300) {
      End(t->handle, ErrorFromReply(endpoint_, t->status, t->error_body), "");
    } else if (t->finish.empty() && !t->done) {
      End(t->handle, Status(Code::kInferenceError, where + ": the stream ended before the generation finished"), "");
    } else {
      End(t->handle, Status::Ok(), t->finish == "length" ? "length" : "stop");
    }
  }
}

void UpstreamStreams::Loop() {
  auto* multi = static_cast<CURLM*>(multi_);
  auto next_sweep = Clock::now() + kSweepEvery;
  epoll_event events[64];
  for (;;) {
    std::vector<std::unique_ptr<Transfer>> starting;
    std::vector<uint64_t> cancelling;
    bool stop;
    {
      std::lock_guard lock(mu_);
      starting.swap(starting_);
      cancelling.swap(cancelling_);
      stop = stop_;
    }
    for (auto& t : starting) Begin(std::move(t));
    for (uint64_t h : cancelling) End(h, Status::Ok(), "cancelled");
    if (stop) break;

    // Wait for a socket, a wake-up, libcurl's timer or the next sweep.
    const auto until = std::min(next_sweep, curl_deadline_);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    const int n = epoll_wait(epoll_, events, 64, static_cast<int>(std::clamp<int64_t>(wait, 0, 1000)));
    int running = 0;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_) {
        uint64_t count;
        (void)!read(wake_, &count, sizeof(count));
        continue;
      }
      const uint32_t ev = events[i].events;
      const int flags = (ev & EPOLLIN ? CURL_CSELECT_IN : 0) | (ev & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (ev & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
      curl_multi_socket_action(multi, fd, flags, &running);
    }
    const auto now = Clock::now();
    if (now >= curl_deadline_) {
      curl_deadline_ = Clock::time_point::max();  // spent: libcurl sets it again if it wants it
      curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    Finished();
    if (now >= next_sweep) {
      Sweep();
      next_sweep = now + kSweepEvery;
    }
  }
  // Unloading: whatever still runs goes back to be tried again.
  while (!running_.empty()) {
    End(running_.begin()->first, Status(Code::kNoCapacity, "the upstream model is being unloaded"), "");
  }
}

}  // namespace shoal::upstream
