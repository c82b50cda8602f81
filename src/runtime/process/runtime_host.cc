#include "runtime/process/runtime_host.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "common/clock.h"
#include "common/log.h"
#include "runtime/process/frame.h"
#include "runtime/process/protocol.h"
#include "runtime/process/runtime_process.h"

namespace shoal::runtime_process {

// One peer: its socket, its writer and whether it has said hello.
class RuntimeHost::Connection {
 public:
  explicit Connection(int fd) : fd_(fd), writer_(fd) {}
  ~Connection() { ::close(fd_); }
  void Send(const std::string& frame) {
    // A peer gone is noticed by the reader; nothing to do here.
    (void)writer_.Write(frame);
  }
  int fd() const { return fd_; }
  bool greeted = false;  // reader thread only

  // The generations under way, by request id: their model and handle
  // (0 until Start returned), so cancel can find them.
  struct Generation {
    std::shared_ptr<Model> model;
    uint64_t handle = 0;
    bool cancel = false;  // asked before Start returned
  };
  std::mutex mu;  // guards generating
  std::map<uint64_t, Generation> generating;

 private:
  int fd_;
  FrameWriter writer_;
};

RuntimeHost::RuntimeHost(Runtime* runtime, int runners) : runtime_(runtime) {
  for (int i = 0; i < std::max(runners, 1); ++i) {
    runners_.emplace_back([this] {
      while (auto job = jobs_.Pop()) (*job)();
    });
  }
}

RuntimeHost::~RuntimeHost() {
  jobs_.Close();
  for (auto& t : runners_) t.join();
}

namespace {

template <class In, class Out, class ReadIn, class Call, class Reply>
std::string RunBatch(const Request& q, Model& model, ReadIn read_in, Call call, Reply reply) {
  std::vector<In> in;
  if (Status s = read_in(q.items, &in); !s.ok()) return ErrorReply(q.id, s);
  std::vector<Out> out(in.size());
  if (Status s = call(model, std::span<const In>(in), std::span<Out>(out)); !s.ok()) {
    return ErrorReply(q.id, Status(Code::kInferenceError, s.message()));
  }
  return reply(q.id, std::span<const Out>(out));
}

}  // namespace

bool RuntimeHost::ServeConnection(int fd) {
  auto conn = std::make_shared<Connection>(fd);
  // A peer gone wants none of its generations: they end now, not at max_tokens.
  struct CancelAtClose {
    RuntimeHost* host;
    Connection* conn;
    ~CancelAtClose() {
      std::vector<uint64_t> ids;
      {
        std::lock_guard lock(conn->mu);
        for (const auto& [id, g] : conn->generating) ids.push_back(id);
      }
      for (uint64_t id : ids) host->Cancel(id, *conn);
    }
  } cancel_at_close{this, conn.get()};
  std::string frame;
  while (true) {
    if (Status s = ReadFrame(fd, &frame); !s.ok()) {
      spdlog::info("runtime-host: connection closed: {}", s.message());
      return false;
    }
    auto owned = std::make_shared<std::string>(std::move(frame));
    auto q = std::make_shared<Request>();
    if (Status s = ReadRequest(*owned, q.get()); !s.ok()) {
      // Not a request: say so and hang up (the peer is not speaking this protocol).
      conn->Send(ErrorReply(q->id, Status(Code::kInvalidInput, s.message())));
      return false;
    }
    if (q->op == "hello") {
      if (std::find(q->versions.begin(), q->versions.end(), kProtocolVersion) == q->versions.end()) {
        conn->Send(ErrorReply(q->id, InvalidInput("this runtime speaks version " + std::to_string(kProtocolVersion) +
                                                  " of the runtime protocol")));
        return false;
      }
      conn->greeted = true;
      RuntimeHello hello;
      hello.runtime = std::string(runtime_->name());
      hello.version = "shoal runtime contract " + std::to_string(runtime_->api_version());
      // Generation over the protocol is the runtime's own scheduling; a
      // runtime whose generators the worker steps offers the batch tasks only.
      for (Task t : runtime_->tasks()) {
        if (t != Task::kGenerate || runtime_->streams_generation()) hello.tasks.push_back(t);
      }
      hello.lora = true;
      for (OutputFormat::Kind f : runtime_->output_formats()) hello.formats.emplace_back(FormatName(f));
      hello.adjustments = runtime_->logit_adjustments();
      hello.counts_tokens = runtime_->counts_tokens();
      conn->Send(HelloReply(q->id, hello));
      continue;
    }
    if (!conn->greeted) {
      conn->Send(ErrorReply(q->id, InvalidInput("say hello first")));
      return false;
    }
    if (q->op == "health") {
      uint32_t models = 0;
      {
        std::lock_guard lock(mu_);
        models = static_cast<uint32_t>(models_.size());
      }
      conn->Send(HealthReply(q->id, models));
      continue;
    }
    if (q->op == "memory") {
      MemoryReport report;
      report.rss_bytes = ResidentBytesOf(getpid());
      {
        std::lock_guard lock(mu_);
        for (const auto& [handle, model] : models_) report.models.emplace_back(handle, model->memory_bytes());
      }
      conn->Send(MemoryReply(q->id, report));
      continue;
    }
    if (q->op == "stop") {
      requests_.Close();
      stopping_ = true;
      requests_.WaitEmpty(SteadyClock::time_point::max());
      conn->Send(EmptyReply(q->id));
      return true;
    }
    if (q->op == "cancel") {
      Cancel(q->target, *conn);
      conn->Send(EmptyReply(q->id));
      continue;
    }
    auto holder = requests_.TryEnter();
    if (!holder) {
      conn->Send(ErrorReply(q->id, Status(Code::kNoCapacity, "the runtime is stopping")));
      continue;
    }
    auto held = std::make_shared<Gate::Holder>(std::move(*holder));
    if (q->op == "generate") {
      // The job replies as it streams, and holds the gate until its end.
      jobs_.Push([this, conn, owned, q, held] { StartGeneration(*q, conn, held); });
      continue;
    }
    jobs_.Push([this, conn, owned, q, held] {
      conn->Send(Handle(*q, *conn));
      held->Release();
    });
  }
}

std::string RuntimeHost::Handle(const Request& q, Connection& conn) {
  auto no_such_model = [&] {
    return ErrorReply(q.id, Status(Code::kModelNotFound, "no model '" + std::string(q.model) + "' is loaded"));
  };
  if (q.op == "load") {
    ModelConfig config;
    if (Status s = ReadConfig(q.config, runtime_->name(), &config); !s.ok()) return ErrorReply(q.id, s);
    if (q.model.empty()) return ErrorReply(q.id, InvalidInput("load: no model handle"));
    if (config.task == Task::kGenerate && !runtime_->streams_generation()) {
      return ErrorReply(q.id, InvalidInput("this runtime does not generate over the runtime protocol"));
    }
    LoadContext ctx;
    ctx.threads = static_cast<int>(std::max<uint32_t>(q.threads, 1));
    auto last = SteadyClock::now();
    ctx.progress = [&](double done) {  // at most ten a second
      const auto now = SteadyClock::now();
      if (now - last < std::chrono::milliseconds(100)) return;
      last = now;
      conn.Send(ProgressReply(q.id, std::clamp(done, 0.0, 1.0)));
    };
    auto model = runtime_->Load(config, ctx);
    if (!model.ok()) return ErrorReply(q.id, Status(Code::kModelLoadFailed, model.status().message()));
    const uint64_t bytes = (*model)->memory_bytes();
    std::lock_guard lock(mu_);
    models_[std::string(q.model)] = std::shared_ptr<Model>(std::move(model).value());
    return BytesReply(q.id, bytes);
  }
  if (q.op == "unload") {
    std::lock_guard lock(mu_);
    auto it = models_.find(q.model);
    if (it == models_.end()) return no_such_model();
    models_.erase(it);  // a batch running on it holds it until it ends
    return EmptyReply(q.id);
  }
  if (q.op == "check_lora") {
    ModelConfig base;
    LoraConfig lora;
    if (Status s = ReadConfig(q.config, runtime_->name(), &base); !s.ok()) return ErrorReply(q.id, s);
    if (Status s = ReadLora(q.lora, &lora); !s.ok()) return ErrorReply(q.id, s);
    auto bytes = runtime_->CheckLora(base, lora);
    return bytes.ok() ? BytesReply(q.id, *bytes) : ErrorReply(q.id, bytes.status());
  }
  if (q.op != "loras" && q.op != "encode" && q.op != "score" && q.op != "extract" && q.op != "tokenize") {
    return ErrorReply(q.id, InvalidInput("unknown op '" + std::string(q.op) + "'"));
  }
  std::shared_ptr<Model> model;
  {
    std::lock_guard lock(mu_);
    auto it = models_.find(q.model);
    if (it != models_.end()) model = it->second;
  }
  if (!model) return no_such_model();
  if (q.op == "loras") {
    std::vector<LoraConfig> loras;
    if (Status s = ReadLoras(q.loras, &loras); !s.ok()) return ErrorReply(q.id, s);
    Status s = model->UpdateLoras(loras);
    return s.ok() ? EmptyReply(q.id) : ErrorReply(q.id, s);
  }
  if (q.op == "encode") {
    return RunBatch<EncodeInput, EncodeOutput>(
        q, *model, ReadEncodeInputs, [](Model& m, auto in, auto out) { return m.Encode(in, out); }, EncodeReply);
  }
  if (q.op == "score") {
    return RunBatch<ScoreInput, ScoreOutput>(
        q, *model, ReadScoreInputs, [](Model& m, auto in, auto out) { return m.Score(in, out); }, ScoreReply);
  }
  if (q.op == "extract") {
    return RunBatch<ExtractInput, ExtractOutput>(
        q, *model, ReadExtractInputs, [](Model& m, auto in, auto out) { return m.Extract(in, out); },
        ExtractReply);
  }
  return RunBatch<TokenizeInput, TokenizeOutput>(
      q, *model, ReadTokenizeInputs, [](Model& m, auto in, auto out) { return m.Tokenize(in, out); },
      TokenizeReply);
}

void RuntimeHost::StartGeneration(const Request& q, const std::shared_ptr<Connection>& conn,
                                  std::shared_ptr<Gate::Holder> held) {
  GenerationJob job;
  if (Status s = ReadGenerationJob(q.job, &job); !s.ok()) {
    conn->Send(ErrorReply(q.id, s));
    return;
  }
  std::shared_ptr<Model> model;
  {
    std::lock_guard lock(mu_);
    auto it = models_.find(q.model);
    if (it != models_.end()) model = it->second;
  }
  StreamingGenerator* gen = model ? model->streaming_generator() : nullptr;
  if (!gen) {
    conn->Send(ErrorReply(q.id, Status(Code::kModelNotFound, "no generative model '" + std::string(q.model) +
                                                                  "' is loaded")));
    return;
  }
  const uint64_t id = q.id;
  {
    std::lock_guard lock(conn->mu);
    conn->generating[id] = Connection::Generation{model, 0, false};
  }
  // The sink holds the model and the gate until the job's final update. It
  // runs on the runtime's thread, which must not drop the model's last
  // reference (the model would join that thread): a runner drops it.
  auto sink = [this, conn, id, model, held](GenerationUpdate&& u) mutable {
    if (!u.text.empty() || !u.token_ids.empty()) conn->Send(ChunkReply(id, u));
    if (!u.final) return;
    {
      std::lock_guard lock(conn->mu);
      conn->generating.erase(id);
    }
    conn->Send(u.status.ok() ? FinishReply(id, u) : ErrorReply(id, u.status));
    held->Release();
    jobs_.Push([m = std::move(model)] {});
  };
  const uint64_t handle = gen->Start(std::move(job), std::move(sink));
  bool cancel = false;
  {
    std::lock_guard lock(conn->mu);
    auto it = conn->generating.find(id);
    if (it == conn->generating.end()) return;  // it already ended
    it->second.handle = handle;
    cancel = it->second.cancel;
  }
  if (cancel) gen->Cancel(handle);
}

void RuntimeHost::Cancel(uint64_t target, Connection& conn) {
  std::shared_ptr<Model> model;
  uint64_t handle = 0;
  {
    std::lock_guard lock(conn.mu);
    auto it = conn.generating.find(target);
    if (it == conn.generating.end()) return;  // unknown or ended: nothing to do
    if (it->second.handle == 0) {
      it->second.cancel = true;  // StartGeneration cancels it once started
      return;
    }
    model = it->second.model;
    handle = it->second.handle;
  }
  model->streaming_generator()->Cancel(handle);
}

Status RuntimeHost::Listen(const std::string& path) {
  const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) return Internal(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    ::close(lfd);
    return InvalidInput("socket path is too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(lfd);
    return Internal("listening on " + path + ": " + why);
  }
  spdlog::info("runtime-host: {} runtime listening on {}", runtime_->name(), path);
  std::vector<std::thread> connections;
  while (!stopping_) {
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      break;  // shut down by the connection that was asked to stop
    }
    connections.emplace_back([this, fd, lfd] {
      if (ServeConnection(fd)) ::shutdown(lfd, SHUT_RDWR);
    });
  }
  ::close(lfd);
  ::unlink(path.c_str());
  // Connections still open end when their peers hang up.
  for (auto& t : connections) t.join();
  return Status::Ok();
}

int ServeRuntimeProcess(Runtime* runtime, int runners, const std::string& listen, const std::string& who) {
  RuntimeHost host(runtime, runners);
  if (!listen.empty()) {
    if (Status s = host.Listen(listen); !s.ok()) {
      spdlog::error("{}: {}", who, s.ToString());
      return 1;
    }
    return 0;
  }
  const char* fd = std::getenv("SHOAL_RUNTIME_FD");
  if (!fd || !*fd) {
    spdlog::error("{}: give --listen PATH, or start it with SHOAL_RUNTIME_FD naming its socket", who);
    return 2;
  }
  host.ServeConnection(std::atoi(fd));
  return 0;
}

}  // namespace shoal::runtime_process
