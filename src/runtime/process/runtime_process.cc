#include "runtime/process/runtime_process.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace shoal::runtime_process {
namespace {

// After a first death a new process starts at once; after the next ones,
// 0.5 s, doubling up to 30 s.
constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
constexpr auto kLongestBackoff = std::chrono::milliseconds(30000);
// A process this long alive has forgiven its predecessors' deaths.
constexpr auto kHealthyAfter = std::chrono::seconds(60);
constexpr auto kStopGrace = std::chrono::milliseconds(5000);

// Why a connection broke, as a death's reason.
std::string ReasonOf(const Status& broken) {
  if (broken.code() == Code::kDeadlineExceeded) return "hung";
  const std::string& m = broken.message();
  if (m.find("no answer") != std::string::npos) return "hung";
  if (m.find("closed the connection") != std::string::npos || m.find("reset by peer") != std::string::npos ||
      m.find("Broken pipe") != std::string::npos) {
    return "exited";
  }
  return "protocol";
}

}  // namespace

uint64_t ResidentBytesOf(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/statm";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

RuntimeProcess::RuntimeProcess(ProcessOptions options) : options_(std::move(options)) {
  watcher_ = std::thread([this] { Watch(); });
}

RuntimeProcess::~RuntimeProcess() {
  std::unique_lock lock(mu_);
  closing_ = true;
  wake_.notify_all();
  lock.unlock();
  watcher_.join();
  lock.lock();
  StopLocked(lock);
}

pid_t RuntimeProcess::pid() const {
  std::lock_guard lock(mu_);
  return process_ ? process_->pid() : -1;
}

RuntimeHello RuntimeProcess::last_hello() const {
  std::lock_guard lock(mu_);
  return last_hello_;
}

uint64_t RuntimeProcess::starts() const {
  std::lock_guard lock(mu_);
  return generation_;
}

Result<Connected> RuntimeProcess::Connect() {
  std::unique_lock lock(mu_);
  if (closing_) return RuntimeGone("the worker is stopping");
  if (client_ && client_->broken()) KillBrokenLocked();
  if (!client_) SHOAL_RETURN_IF_ERROR(StartLocked());
  return Connected{client_, generation_};
}

Status RuntimeProcess::StartLocked() {
  const auto now = SteadyClock::now();
  if (now < next_start_) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_start_ - now).count();
    if (deaths_in_a_row_ >= options_.max_deaths_in_a_row) {
      return Status(Code::kModelLoadFailed, options_.name + " runtime process died " +
                                                std::to_string(deaths_in_a_row_) + " times in a row (last: " +
                                                last_death_.message() + "); next try in " + std::to_string(wait) +
                                                " ms");
    }
    return RuntimeGone("restarting in " + std::to_string(wait) + " ms after: " + last_death_.message());
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Internal(std::string("socketpair: ") + std::strerror(errno));
  }
  auto child = Subprocess::SpawnWithSocket(options_.command, "", {"SHOAL_RUNTIME_FD=3"}, fds[1]);
  ::close(fds[1]);
  if (!child.ok()) {
    ::close(fds[0]);
    return Status(Code::kModelLoadFailed, options_.name + " runtime process did not start: " + child.status().message());
  }
  process_.emplace(std::move(child).value());
  const pid_t pid = process_->pid();
  pid_ = pid;
  spdlog::info("runtime {}: started process {} ({})", options_.name, pid, options_.command.front());
  auto client = RuntimeClient::Open(fds[0], options_.hello_timeout, [this](const Status&) { wake_.notify_all(); });
  Status refused;
  if (!client.ok()) {
    refused = client.status();
  } else if ((*client)->hello().runtime != options_.runtime) {
    refused = InvalidInput("it says it is the '" + (*client)->hello().runtime + "' runtime, not '" +
                           options_.runtime + "'");
  }
  if (!refused.ok()) {
    client_ = nullptr;
    const bool exited = !process_->Running();
    KillLocked(exited ? "exited" : ReasonOf(refused), "its hello was refused: " + refused.message());
    return Status(Code::kModelLoadFailed, options_.name + " runtime process refused: " + refused.message());
  }
  client_ = std::move(client).value();
  last_hello_ = client_->hello();
  ++generation_;
  started_at_ = SteadyClock::now();
  memory_at_hello_ = ResidentBytesOf(pid);
  spdlog::info("runtime {}: process {} speaks protocol {} ({}), {:.1f} MB resident", options_.name, pid,
               client_->hello().protocol, client_->hello().version, memory_at_hello_ / 1e6);
  return Status::Ok();
}

void RuntimeProcess::Kill(uint64_t generation, const std::string& reason, const std::string& why) {
  std::lock_guard lock(mu_);
  if (process_ && generation == generation_) KillLocked(reason, why);
}

void RuntimeProcess::KillLocked(const std::string& reason, const std::string& why) {
  const pid_t pid = pid_;  // process_ may have reaped it already
  spdlog::error("runtime {}: process {} killed ({}): {}; its calls in flight fail and their items run again",
                options_.name, pid, reason, why);
  if (options_.deaths) options_.deaths->With({options_.runtime, reason}).Inc();
  if (client_) client_->Break(RuntimeGone(why));
  client_.reset();
  if (process_) process_->Stop(SIGKILL, std::chrono::milliseconds(0));
  process_.reset();
  models_.clear();  // gone with it: their owners load them again
  ++deaths_in_a_row_;
  last_death_ = Status(Code::kNoCapacity, reason + ": " + why);
  const auto backoff = deaths_in_a_row_ == 1 ? std::chrono::milliseconds(0)
                                             : std::min<std::chrono::milliseconds>(
                                                   kLongestBackoff, kFirstBackoff * (1 << std::min(deaths_in_a_row_ - 2, 10)));
  next_start_ = SteadyClock::now() + backoff;
}

std::optional<Connected> RuntimeProcess::Current() const {
  std::lock_guard lock(mu_);
  if (!client_ || client_->broken()) return std::nullopt;
  return Connected{client_, generation_};
}

void RuntimeProcess::StopIfIdle() {
  std::unique_lock lock(mu_);
  if (models_.empty()) StopLocked(lock);
}

void RuntimeProcess::KillBrokenLocked() {
  const Status why = client_->why_broken();
  // A process that died takes its socket with it: whatever the client read
  // last (end of file, a reset), it exited.
  const bool exited = process_ && !process_->Running();
  KillLocked(exited ? "exited" : ReasonOf(why), why.message());
}

void RuntimeProcess::Holds(const std::string& handle, uint64_t bytes) {
  std::lock_guard lock(mu_);
  models_[handle] = bytes;
}

void RuntimeProcess::Releases(const std::string& handle) {
  std::unique_lock lock(mu_);
  if (models_.erase(handle) == 0 || !models_.empty()) return;
  StopLocked(lock);
}

void RuntimeProcess::StopLocked(std::unique_lock<std::mutex>& lock) {
  // Detached under the lock, so the next Connect starts a fresh process.
  std::shared_ptr<RuntimeClient> client = std::move(client_);
  std::optional<Subprocess> process = std::move(process_);
  process_.reset();
  if (!process) return;
  lock.unlock();
  spdlog::info("runtime {}: stopping process {} (no model left in it)", options_.name, process->pid());
  if (client && !client->broken()) {
    const uint64_t id = client->NextId();
    (void)client->Call(id, PlainRequest(id, "stop"), kStopGrace);
  }
  client.reset();
  process->Stop(SIGTERM, kStopGrace);
  lock.lock();
}

void RuntimeProcess::Watch() {
  std::unique_lock lock(mu_);
  while (!closing_) {
    wake_.wait_for(lock, options_.health_every);
    if (closing_ || !process_) continue;
    if (!process_->Running()) {
      KillLocked("exited", "it exited");
      continue;
    }
    if (client_ && client_->broken()) {
      KillBrokenLocked();
      continue;
    }
    uint64_t models = 0;
    for (const auto& [handle, bytes] : models_) models += bytes;
    const uint64_t limit = memory_at_hello_ + models + options_.memory_headroom_bytes;
    if (const uint64_t rss = ResidentBytesOf(process_->pid()); rss > limit) {
      KillLocked("memory", "it holds " + std::to_string(rss >> 20) + " MiB, over its limit of " +
                               std::to_string(limit >> 20) + " MiB (its models' memory and " +
                               std::to_string(options_.memory_headroom_bytes >> 20) + " MiB)");
      continue;
    }
    if (SteadyClock::now() - started_at_ > kHealthyAfter) deaths_in_a_row_ = 0;
    std::shared_ptr<RuntimeClient> client = client_;
    lock.unlock();
    const uint64_t id = client->NextId();
    auto health = client->Call(id, PlainRequest(id, "health"), options_.health_timeout);
    lock.lock();
    if (!health.ok() && client_ == client && health.status().code() != Code::kNoCapacity) {
      KillLocked("protocol", "its health call failed: " + health.status().ToString());
    }
    // A call that timed out broke the connection: the next turn kills it.
  }
}

}  // namespace shoal::runtime_process
