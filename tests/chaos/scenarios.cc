#include "chaos/scenarios.h"

#include <signal.h>
#include <sys/wait.h>

#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "chaos/nats_cluster.h"
#include "common/subprocess.h"
#include "queue/control_plane.h"
#include "queue/nats_server.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "runtime/registry/registry.h"
#include "support/child_processes.h"
#include "support/http_client.h"
#include "support/in_flight_probe.h"
#include "support/metrics_text.h"
#include "queue/subjects.h"

namespace shoal::chaos {
namespace {

constexpr char kModel[] = "chaos/embed";
constexpr int kDim = 8;

// The identity model under load: 5 ms per batch of up to 8; AckWait 2 s, so
// a dead worker's items come back about 2 s after it died.
constexpr char kProfile[] =
    "id: chaos/embed\n"
    "runtime: identity\n"
    "max_input_tokens: 64\n"
    "pinned: true\n"
    "identity: {dim: 8, us_per_batch: 5000}\n"
    "batching: {max_batch_requests: 8}\n"
    "queue: {ack_wait_ms: 2000, max_deliver: 5}\n";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool Interrupted(const ScenarioOptions& o) { return o.interrupted && o.interrupted->load(); }

// Sleeps `s` seconds; an error when interrupted (Ctrl-C) meanwhile.
Status Sleep(const ScenarioOptions& o, double s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  while (Clock::now() < until && !Interrupted(o)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Interrupted(o) ? Internal("interrupted") : Status::Ok();
}

// Prints a progress line every 2 s (and at each phase change) while the
// scenario runs: its clients' counts so far and what it is doing.
class Ticker {
 public:
  Ticker(const ScenarioOptions& o, std::string name) : o_(o), name_(std::move(name)), t0_(Clock::now()) {
    if (o_.progress) thread_ = std::thread([this] { Loop(); });
  }
  ~Ticker() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void Watch(const LoadDriver* d) {
    std::lock_guard lock(mu_);
    driver_ = d;
  }
  void Phase(const std::string& phase) {
    {
      std::lock_guard lock(mu_);
      phase_ = phase;
    }
    Print();
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(2), [this] { return done_; })) {
      lock.unlock();
      Print();
      lock.lock();
    }
  }
  void Print() {
    if (!o_.progress) return;
    std::lock_guard lock(mu_);
    char line[256];
    if (driver_) {
      std::snprintf(line, sizeof line, "  [%s] %5.1f s  sent %6lld  completed %6lld  failed %4lld  lost %lld  - %s",
                    name_.c_str(), Seconds(Clock::now() - t0_), static_cast<long long>(driver_->sent()),
                    static_cast<long long>(driver_->completed()), static_cast<long long>(driver_->failed()),
                    static_cast<long long>(driver_->lost()), phase_.c_str());
    } else {
      std::snprintf(line, sizeof line, "  [%s] %5.1f s  - %s", name_.c_str(), Seconds(Clock::now() - t0_),
                    phase_.c_str());
    }
    o_.progress(line);
  }

  const ScenarioOptions& o_;
  std::string name_;
  Clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;              // guarded by mu_
  const LoadDriver* driver_ = nullptr;  // guarded by mu_
  std::string phase_;              // guarded by mu_
  std::thread thread_;
};

// Starts the load (shown by `ticker`) and runs it `o.warm_s` before a fault.
Status WarmUp(const ScenarioOptions& o, LoadDriver& driver, Ticker& ticker) {
  ticker.Watch(&driver);
  driver.Start();
  ticker.Phase("warm-up");
  return Sleep(o, o.warm_s);
}

// The Shoal processes of a scenario, against one NATS URL (list).
class Fleet {
 public:
  Fleet(const ScenarioOptions& o, std::string dir, std::string nats, int replicas)
      : o_(o), dir_(std::move(dir)), nats_(std::move(nats)), replicas_(replicas) {}

  std::vector<std::string> NatsArgs() const {
    std::vector<std::string> a = {"--nats", nats_};
    if (replicas_ > 0) a.insert(a.end(), {"--replicas", std::to_string(replicas_)});
    return a;
  }

  // `shoal models add` with the identity profile (and `extra` lines), as an
  // operator would.
  Status Register(const std::string& extra = "") { return RegisterProfile(std::string(kProfile) + extra); }

  Status RegisterProfile(const std::string& yaml) {
    const std::string profile = dir_ + "/chaos-model.yaml";
    std::ofstream(profile) << yaml;
    std::vector<std::string> argv = {o_.shoal_binary, "models"};
    for (auto& a : NatsArgs()) argv.push_back(a);
    argv.insert(argv.end(), {"add", profile});
    auto p = Subprocess::Spawn(argv, dir_ + "/models-add.log");
    if (!p.ok()) return p.status();
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (p->Running() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int st = p->Stop(SIGKILL, std::chrono::milliseconds(0));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return Internal("`shoal models add` failed; see " + dir_ + "/models-add.log");
    return Status::Ok();
  }

  Result<Subprocess> Worker(const std::string& id) {
    std::vector<std::string> argv = {o_.shoal_binary, "worker", "--id", id};
    for (auto& a : NatsArgs()) argv.push_back(a);
    return Subprocess::Spawn(argv, dir_ + "/" + id + ".log");
  }

  // A worker on a host of its own: `argv_prefix` runs it there (e.g. in a
  // network namespace), and it reaches NATS at `nats` alone.
  Result<Subprocess> WorkerOn(const std::string& id, const std::vector<std::string>& argv_prefix,
                              const std::string& nats) {
    std::vector<std::string> argv = argv_prefix;
    argv.insert(argv.end(), {o_.shoal_binary, "worker", "--id", id, "--nats", nats});
    if (replicas_ > 0) argv.insert(argv.end(), {"--replicas", std::to_string(replicas_)});
    return Subprocess::Spawn(argv, dir_ + "/" + id + ".log");
  }

  Result<Subprocess> Gateway(const std::string& id, int port) {
    std::vector<std::string> argv = {o_.shoal_binary, "gateway", "--id", id, "--port", std::to_string(port)};
    for (auto& a : NatsArgs()) argv.push_back(a);
    argv.insert(argv.end(), o_.gateway_args.begin(), o_.gateway_args.end());
    return Subprocess::Spawn(argv, dir_ + "/" + id + ".log");
  }

  Status Connect() {
    if (control_.nc) return Status::Ok();
    auto c = queue::ControlPlane::Connect(nats_, "shoal-chaos", {}, replicas_);
    if (!c.ok()) return c.status();
    control_ = std::move(c).value();
    auto r = queue::WorkerRegistry::Open(control_.workers.get());
    if (!r.ok()) return r.status();
    registry_ = std::move(r).value();
    return Status::Ok();
  }

  // Until worker `id` reports `model` loaded.
  Status WaitForWorker(const std::string& id, const std::string& model = kModel) {
    SHOAL_RETURN_IF_ERROR(Connect());
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until && !Interrupted(o_)) {
      for (const auto& w : registry_->Live()) {
        if (w.id != id) continue;
        for (const auto& m : w.resident) {
          if (m == model) return Status::Ok();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Internal("worker " + id + " did not load " + model + " in 30 s; see " + dir_ + "/" + id + ".log");
  }

  Status WaitReady(int port, const std::string& id) {
    testing::HttpClient http(port, 2000);
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until && !Interrupted(o_)) {
      auto r = http.Get("/readyz");
      if (r.ok() && r->status == 200) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Internal("gateway " + id + " not ready in 30 s; see " + dir_ + "/" + id + ".log");
  }

  // Messages left in the work stream after `timeout` (acks travel late, and a
  // dead worker's items come back after AckWait).
  // Waits until no work is left: no message the model's consumers have yet
  // to deliver or to see acknowledged. Returns what is left. That, not the
  // stream's message count, is what "every item acknowledged" means: in a
  // cluster, nats-server 2.9 may keep a work-queue message whose ack its
  // consumer took during a leader change — a message no consumer will ever
  // deliver again (the client got its answer), counted in `ghosts`.
  uint64_t WaitForEmptyStream(std::chrono::seconds timeout, uint64_t* ghosts) {
    *ghosts = 0;
    if (!Connect().ok()) return 0;
    const std::string stream = queue::WorkStreamName("default");
    const auto until = Clock::now() + timeout;
    uint64_t left = 0;
    do {
      uint64_t in_stream = 0, pending = 0;
      jsStreamInfo* si = nullptr;
      if (js_GetStreamInfo(&si, control_.js.get(), stream.c_str(), nullptr, nullptr) == NATS_OK) {
        in_stream = si->State.Msgs;
        jsStreamInfo_Destroy(si);
      }
      jsConsumerInfoList* consumers = nullptr;
      if (in_stream > 0 && js_Consumers(&consumers, control_.js.get(), stream.c_str(), nullptr, nullptr) == NATS_OK) {
        for (int i = 0; i < consumers->Count; ++i) {
          pending += consumers->List[i]->NumPending + static_cast<uint64_t>(consumers->List[i]->NumAckPending);
        }
        jsConsumerInfoList_Destroy(consumers);
      }
      left = std::min(in_stream, pending);
      *ghosts = in_stream - left;
      if (left == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (Clock::now() < until);
    return left;
  }

  jsCtx* js() { return control_.js.get(); }

 private:
  const ScenarioOptions& o_;
  std::string dir_, nats_;
  int replicas_;
  queue::ControlPlane control_;
  std::unique_ptr<queue::WorkerRegistry> registry_;
};

LoadOptions Load(const ScenarioOptions& o, std::vector<int> ports, const std::string& tag) {
  LoadOptions l;
  l.ports = std::move(ports);
  l.clients = o.clients;
  l.model = kModel;
  l.dim = kDim;
  l.tag = tag;
  return l;
}

std::string MakeDir(const ScenarioOptions& o, const std::string& name) {
  const std::string dir = o.dir + "/" + name;
  std::filesystem::create_directories(dir);
  return dir;
}

// Stops the load, counts, and checks the queue drained.
void Finish(LoadDriver& driver, Fleet& fleet, Clock::time_point fault, Ticker& ticker, ScenarioResult* r) {
  ticker.Phase("stopping the clients");
  driver.Stop();
  r->tally = driver.Summarize(fault);
  ticker.Phase("waiting for the work stream to drain");
  r->left_in_stream = fleet.WaitForEmptyStream(std::chrono::seconds(15), &r->ghosts_in_stream);
}

Result<int> Port() { return FreeLoopbackPort(); }

// A loopback nats-server with file storage under `dir` (port 0: any).
queue::NatsServerOptions ServerAt(const std::string& dir, int port) {
  queue::NatsServerOptions o;
  o.data_dir = dir;
  o.port = port;
  return o;
}

#define CHAOS_TRY(expr)                       \
  do {                                        \
    if (Status _s = (expr); !_s.ok()) {       \
      r.error = _s.ToString();                \
      return r;                               \
    }                                         \
  } while (0)
#define CHAOS_ASSIGN(lhs, expr)                  \
  auto lhs##_result = (expr);                    \
  if (!lhs##_result.ok()) {                      \
    r.error = lhs##_result.status().ToString();  \
    return r;                                    \
  }                                              \
  auto lhs = std::move(lhs##_result).value()

ScenarioResult WorkerKill(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "worker_kill";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("starting nats-server, two workers, a gateway");
  CHAOS_ASSIGN(nats, queue::NatsServer::Start(ServerAt(r.dir + "/nats", 0)));
  Fleet fleet(o, r.dir, nats->url(), 0);
  CHAOS_TRY(fleet.Register());
  CHAOS_ASSIGN(victim, fleet.Worker("victim"));
  CHAOS_ASSIGN(survivor, fleet.Worker("survivor"));
  CHAOS_TRY(fleet.WaitForWorker("victim"));
  CHAOS_TRY(fleet.WaitForWorker("survivor"));
  CHAOS_ASSIGN(port, Port());
  CHAOS_ASSIGN(gateway, fleet.Gateway("gateway", port));
  CHAOS_TRY(fleet.WaitReady(port, "gateway"));
  CHAOS_ASSIGN(probe, testing::InFlightProbe::Start(nats->url(), "victim"));

  LoadDriver driver(Load(o, {port}, "worker-kill"));
  CHAOS_TRY(WarmUp(o, driver, ticker));
  // Kill it while it provably holds unanswered items: freeze it, let what it
  // already sent arrive, check; thaw and retry if it held none.
  ticker.Phase("waiting until the victim holds unanswered items");
  Clock::time_point fault{};
  for (const auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until && !Interrupted(o);) {
    if (probe->Held() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    fault = Clock::now();
    victim.Signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const size_t held = probe->Held();
    if (held > 0) {
      victim.Signal(SIGKILL);
      ticker.Phase("SIGKILLed the victim holding " + std::to_string(held) + " unanswered items");
      break;
    }
    victim.Signal(SIGCONT);
    fault = {};
  }
  if (fault == Clock::time_point{}) {
    r.error = "the victim never held an unanswered item";
    return r;
  }
  CHAOS_ASSIGN(replacement, fleet.Worker("replacement"));
  CHAOS_TRY(fleet.WaitForWorker("replacement"));
  ticker.Phase("replacement worker up");
  CHAOS_TRY(Sleep(o, o.after_s));
  Finish(driver, fleet, fault, ticker, &r);
  survivor.Stop(SIGTERM, std::chrono::seconds(5));
  replacement.Stop(SIGTERM, std::chrono::seconds(5));
  gateway.Stop(SIGTERM, std::chrono::seconds(5));
  return r;
}

// A worker whose model (`profile`, id `model`) runs in a runtime process —
// the one child of the worker with `cmdline` in its command line — and a
// gateway; under load, that process is SIGKILLed. Its batches fail, go back
// to the queue and run again in the process the worker starts next.
void KillRuntimeProcess(const ScenarioOptions& o, Ticker& ticker, const std::string& profile,
                        const std::string& model, LoadOptions load, const std::string& cmdline,
                        ScenarioResult& r) {
  ticker.Phase("starting nats-server, a worker whose model runs in a runtime process, a gateway");
  auto fail = [&](const Status& s) { r.error = s.ToString(); };
  auto nats = queue::NatsServer::Start(ServerAt(r.dir + "/nats", 0));
  if (!nats.ok()) return fail(nats.status());
  Fleet fleet(o, r.dir, (*nats)->url(), 0);
  if (Status s = fleet.RegisterProfile(profile); !s.ok()) return fail(s);
  auto worker = fleet.Worker("worker");
  if (!worker.ok()) return fail(worker.status());
  if (Status s = fleet.WaitForWorker("worker", model); !s.ok()) return fail(s);
  auto port = Port();
  if (!port.ok()) return fail(port.status());
  auto gateway = fleet.Gateway("gateway", *port);
  if (!gateway.ok()) return fail(gateway.status());
  if (Status s = fleet.WaitReady(*port, "gateway"); !s.ok()) return fail(s);

  load.ports = {*port};
  load.model = model;
  LoadDriver driver(std::move(load));
  if (Status s = WarmUp(o, driver, ticker); !s.ok()) return fail(s);
  const std::vector<pid_t> runtimes = testing::ChildProcesses(worker->pid(), cmdline);
  if (runtimes.size() != 1) {
    r.error = "expected one runtime process under the worker, found " + std::to_string(runtimes.size());
    return;
  }
  const auto fault = Clock::now();
  ::kill(runtimes[0], SIGKILL);
  ticker.Phase("SIGKILLed the runtime process " + std::to_string(runtimes[0]));
  if (Status s = Sleep(o, o.after_s); !s.ok()) return fail(s);
  Finish(driver, fleet, fault, ticker, &r);
  worker->Stop(SIGTERM, std::chrono::seconds(5));
  gateway->Stop(SIGTERM, std::chrono::seconds(5));
}

ScenarioResult RuntimeProcessKill(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "runtime_process_kill";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  KillRuntimeProcess(o, ticker, std::string(kProfile) + "process: shared\n", kModel,
                     Load(o, {}, "runtime-process-kill"), "runtime-host", r);
  return r;
}

// The seeded BERT encoder, native and as the ONNX export the onnx sidecar
// serves (scripts/make-test-models, make-test-exports), in `dir`.
Status MakeModels(const std::string& dir) {
  const std::string scripts = std::string(SHOAL_SOURCE_DIR) + "/scripts/";
  const std::string log = dir + ".log";
  const std::string make = scripts + "make-test-models " + dir +
                           " --only bert-tiny-mean,cross-encoder-tiny,roberta-tiny > " + log + " 2>&1 && " +
                           scripts + "make-test-exports " + dir + " >> " + log + " 2>&1";
  if (std::system(make.c_str()) != 0) return Internal("generating the models failed; see " + log);
  return Status::Ok();
}

ScenarioResult SidecarKill(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "sidecar_kill";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("generating the models");
  const std::string models = r.dir + "/models";
  CHAOS_TRY(MakeModels(models));
  // The answers must be the native runtime's on the same weights.
  ModelConfig native;
  native.id = "chaos/native";
  native.path = models + "/bert-tiny-mean";
  native.max_input_tokens = 64;
  native.options = RuntimeOptions("native");
  CHAOS_ASSIGN(reference, FindRuntime("native")->Load(native, LoadContext{1}));
  LoadOptions load = Load(o, {}, "sidecar-kill");
  load.want = [&reference](const std::string& text) {
    EncodeInput in{.text = text, .truncate = false, .normalize = true, .lora = {}};
    EncodeOutput out;
    return reference->Encode({&in, 1}, {&out, 1}).ok() && out.status.ok() ? out.dense : std::vector<float>{};
  };
  load.tolerance = 1e-4f;
  KillRuntimeProcess(o, ticker,
                     "id: chaos/onnx\nruntime: onnx\npath: " + models +
                         "/bert-tiny-mean-onnx\nmax_input_tokens: 64\npinned: true\n"
                         "batching: {max_batch_requests: 8}\nqueue: {ack_wait_ms: 2000, max_deliver: 5}\n",
                     "chaos/onnx", std::move(load), "runtime.mjs", r);
  return r;
}

ScenarioResult LlamaCppKill(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "llamacpp_kill";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("generating the model (llama-tiny as F32 GGUF)");
  const std::string models = r.dir + "/models", log = models + ".log";
  const std::string scripts = std::string(SHOAL_SOURCE_DIR) + "/scripts/";
  const std::string make = scripts + "make-test-models " + models + " --only llama-tiny > " + log + " 2>&1 && " +
                           scripts + "make-test-gguf " + models + " >> " + log + " 2>&1";
  if (std::system(make.c_str()) != 0) {
    r.error = "generating the models failed; see " + log;
    return r;
  }
  // Greedy decoding: every answer to a prompt is its first answer (given
  // before the fault, in the warm-up), whole.
  auto first = std::make_shared<std::pair<std::mutex, std::map<std::string, std::string>>>();
  LoadOptions load = Load(o, {}, "llamacpp-kill");
  load.right_text = [first](const std::string& prompt, const std::string& text) {
    std::lock_guard lock(first->first);
    return first->second.emplace(prompt, text).first->second == text && !text.empty();
  };
  KillRuntimeProcess(o, ticker,
                     "id: chaos/llamacpp\nruntime: llamacpp\ntask: generate\npath: " + models +
                         "/llama-tiny-gguf-f32\npinned: true\nbatching: {max_batch_requests: 8}\n"
                         "queue: {ack_wait_ms: 2000, max_deliver: 5}\nllamacpp: {threads: 1}\n",
                     "chaos/llamacpp", std::move(load), "shoal-llamacpp", r);
  return r;
}

ScenarioResult NatsRestart(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "nats_restart";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("starting nats-server (file storage), a worker, a gateway");
  const queue::NatsServerOptions server = ServerAt(r.dir + "/nats", 0);
  CHAOS_ASSIGN(nats, queue::NatsServer::Start(server));
  Fleet fleet(o, r.dir, nats->url(), 0);
  CHAOS_TRY(fleet.Register());
  CHAOS_ASSIGN(worker, fleet.Worker("worker"));
  CHAOS_TRY(fleet.WaitForWorker("worker"));
  CHAOS_ASSIGN(port, Port());
  CHAOS_ASSIGN(gateway, fleet.Gateway("gateway", port));
  CHAOS_TRY(fleet.WaitReady(port, "gateway"));

  LoadDriver driver(Load(o, {port}, "nats-restart"));
  CHAOS_TRY(WarmUp(o, driver, ticker));
  // SIGKILL, not a clean shutdown: what reaches the disk is what survives.
  const auto fault = Clock::now();
  ::kill(nats->pid(), SIGKILL);
  nats->Stop();  // reaps it
  ticker.Phase("nats-server killed; down for 2 s");
  CHAOS_TRY(Sleep(o, 2));
  auto again = queue::NatsServer::Start(ServerAt(server.data_dir, nats->port()));
  if (!again.ok()) {
    r.error = "restarting nats-server: " + again.status().ToString();
    return r;
  }
  nats = std::move(again).value();
  ticker.Phase("nats-server back");
  CHAOS_TRY(Sleep(o, o.after_s));
  Finish(driver, fleet, fault, ticker, &r);
  worker.Stop(SIGTERM, std::chrono::seconds(5));
  gateway.Stop(SIGTERM, std::chrono::seconds(5));
  return r;
}

ScenarioResult GatewayRestart(const ScenarioOptions& o, bool kill) {
  ScenarioResult r;
  r.name = kill ? "gateway_kill" : "gateway_restart";
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("starting nats-server, a worker, two gateways");
  CHAOS_ASSIGN(nats, queue::NatsServer::Start(ServerAt(r.dir + "/nats", 0)));
  Fleet fleet(o, r.dir, nats->url(), 0);
  CHAOS_TRY(fleet.Register());
  CHAOS_ASSIGN(worker, fleet.Worker("worker"));
  CHAOS_TRY(fleet.WaitForWorker("worker"));
  CHAOS_ASSIGN(port_a, Port());
  CHAOS_ASSIGN(port_b, Port());
  CHAOS_ASSIGN(gateway_a, fleet.Gateway("gateway-a", port_a));
  CHAOS_ASSIGN(gateway_b, fleet.Gateway("gateway-b", port_b));
  CHAOS_TRY(fleet.WaitReady(port_a, "gateway-a"));
  CHAOS_TRY(fleet.WaitReady(port_b, "gateway-b"));

  LoadDriver driver(Load(o, {port_a, port_b}, r.name));
  CHAOS_TRY(WarmUp(o, driver, ticker));
  const auto fault = Clock::now();
  if (kill) {
    ticker.Phase("SIGKILL gateway-a");
    gateway_a.Stop(SIGKILL, std::chrono::milliseconds(0));
  } else {
    ticker.Phase("SIGTERM gateway-a: it drains, then exits");
    gateway_a.Stop(SIGTERM, std::chrono::seconds(15));
  }
  ticker.Phase("gateway-a gone; starting it again on its port");
  CHAOS_ASSIGN(again, fleet.Gateway("gateway-a", port_a));
  gateway_a = std::move(again);
  CHAOS_TRY(fleet.WaitReady(port_a, "gateway-a"));
  ticker.Phase("gateway-a back");
  CHAOS_TRY(Sleep(o, o.after_s));
  Finish(driver, fleet, fault, ticker, &r);
  worker.Stop(SIGTERM, std::chrono::seconds(5));
  gateway_a.Stop(SIGTERM, std::chrono::seconds(5));
  gateway_b.Stop(SIGTERM, std::chrono::seconds(5));
  return r;
}

// The work stream's cluster view: its leader and whether each replica is current.
struct StreamCluster {
  std::string leader;
  std::vector<std::pair<std::string, bool>> replicas;  // name, current
  int64_t configured_replicas = 0;
};

Result<StreamCluster> GetStreamCluster(jsCtx* js, const std::string& stream) {
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  if (natsStatus s = js_GetStreamInfo(&si, js, stream.c_str(), nullptr, &code); s != NATS_OK) {
    return queue::FromNats(s, "stream info " + stream);
  }
  StreamCluster c;
  c.configured_replicas = si->Config->Replicas;
  if (si->Cluster) {
    if (si->Cluster->Leader) c.leader = si->Cluster->Leader;
    for (int i = 0; i < si->Cluster->ReplicasLen; ++i) {
      c.replicas.emplace_back(si->Cluster->Replicas[i]->Name, si->Cluster->Replicas[i]->Current);
    }
  }
  jsStreamInfo_Destroy(si);
  return c;
}

// Marks `r` skipped, with the reason, where network namespaces cannot be made.
bool SkippedWithoutNetns(ScenarioResult* r) {
  const std::string why = NetnsNatsCluster::WhyUnavailable();
  if (why.empty()) return false;
  r->skipped = true;
  r->skip_reason = why;
  return true;
}

ScenarioResult NatsClusterKill(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "nats_cluster_kill";
  if (SkippedWithoutNetns(&r)) return r;
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("starting a 3-node JetStream cluster in network namespaces");
  CHAOS_ASSIGN(cluster, NetnsNatsCluster::Start(r.dir + "/cluster"));
  ticker.Phase("cluster up; registering (replicas 3), two workers, a gateway");
  Fleet fleet(o, r.dir, cluster->urls(), NetnsNatsCluster::kNodes);
  CHAOS_TRY(fleet.Register());
  CHAOS_ASSIGN(worker_a, fleet.Worker("worker-a"));
  CHAOS_ASSIGN(worker_b, fleet.Worker("worker-b"));
  CHAOS_TRY(fleet.WaitForWorker("worker-a"));
  CHAOS_TRY(fleet.WaitForWorker("worker-b"));
  CHAOS_ASSIGN(port, Port());
  CHAOS_ASSIGN(gateway, fleet.Gateway("gateway", port));
  CHAOS_TRY(fleet.WaitReady(port, "gateway"));
  // Everything Shoal relies on must be replicated, or the test proves nothing.
  for (const std::string& stream : {queue::WorkStreamName("default"), std::string("KV_shoal_models"),
                                   std::string("KV_shoal_workers"), std::string("SHOAL_DLQ")}) {
    CHAOS_ASSIGN(info, GetStreamCluster(fleet.js(), stream));
    if (info.configured_replicas != NetnsNatsCluster::kNodes) {
      r.error = stream + " has " + std::to_string(info.configured_replicas) + " replicas, not 3";
      return r;
    }
  }

  LoadDriver driver(Load(o, {port}, r.name));
  CHAOS_TRY(WarmUp(o, driver, ticker));
  const std::string stream = queue::WorkStreamName("default");
  CHAOS_ASSIGN(before, GetStreamCluster(fleet.js(), stream));
  const int victim = cluster->NodeNamed(before.leader);
  if (victim < 0) {
    r.error = "the work stream has no leader among the nodes ('" + before.leader + "')";
    return r;
  }
  const auto fault = Clock::now();
  cluster->Kill(victim);
  ticker.Phase("SIGKILLed " + before.leader + " (the work stream's leader); down for 5 s");
  CHAOS_TRY(Sleep(o, 5));
  CHAOS_TRY(cluster->Restart(victim));
  ticker.Phase(before.leader + " restarted; waiting until its replica is current");
  for (const auto until = Clock::now() + std::chrono::seconds(30);; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    auto now = GetStreamCluster(fleet.js(), stream);
    bool current = false;
    if (now.ok()) {
      if (now->leader == before.leader) current = true;
      for (const auto& [name, cur] : now->replicas) current |= name == before.leader && cur;
    }
    if (current) break;
    if (Clock::now() > until || Interrupted(o)) {
      r.error = before.leader + " did not catch up in 30 s after its restart";
      return r;
    }
  }
  ticker.Phase(before.leader + " current again");
  CHAOS_TRY(Sleep(o, o.after_s));
  Finish(driver, fleet, fault, ticker, &r);
  if (auto page = testing::HttpClient(port, 2000).Get("/metrics"); page.ok()) {
    r.hedged = static_cast<uint64_t>(testing::MetricValue(page->body, "shoal_gateway_hedged_items_total").value_or(0));
  }
  worker_a.Stop(SIGTERM, std::chrono::seconds(5));
  worker_b.Stop(SIGTERM, std::chrono::seconds(5));
  gateway.Stop(SIGTERM, std::chrono::seconds(5));
  return r;
}

// A worker's host cut off from the cluster under load: the host of one
// nats-server (not the work stream's leader) runs a worker that reaches NATS
// through that server alone; its link is taken down for 20 s (ten times the
// profile's 2 s ack_wait, and longer than a silent connection may go
// unnoticed) and brought back. What that worker held is
// redelivered to the other worker; what it finishes during the cut cannot be
// acked and is answered again elsewhere, which its client never sees twice
// (the gateway keeps one result per item).
ScenarioResult WorkerPartition(const ScenarioOptions& o) {
  ScenarioResult r;
  r.name = "worker_partition";
  if (SkippedWithoutNetns(&r)) return r;
  r.dir = MakeDir(o, r.name);
  Ticker ticker(o, r.name);
  ticker.Phase("starting a 3-node JetStream cluster in network namespaces");
  CHAOS_ASSIGN(cluster, NetnsNatsCluster::Start(r.dir + "/cluster"));
  Fleet fleet(o, r.dir, cluster->urls(), NetnsNatsCluster::kNodes);
  CHAOS_TRY(fleet.Register());
  CHAOS_TRY(fleet.Connect());
  CHAOS_ASSIGN(info, GetStreamCluster(fleet.js(), queue::WorkStreamName("default")));
  int host = 0;
  while (host < NetnsNatsCluster::kNodes && NetnsNatsCluster::ServerName(host) == info.leader) ++host;
  ticker.Phase("worker-a beside the cluster, worker-b on " + NetnsNatsCluster::ServerName(host) + "'s host");
  CHAOS_ASSIGN(worker_a, fleet.Worker("worker-a"));
  CHAOS_ASSIGN(worker_b, fleet.WorkerOn("worker-b", NetnsNatsCluster::OnHost(host, {}), cluster->url(host)));
  CHAOS_TRY(fleet.WaitForWorker("worker-a"));
  CHAOS_TRY(fleet.WaitForWorker("worker-b"));
  CHAOS_ASSIGN(port, Port());
  CHAOS_ASSIGN(gateway, fleet.Gateway("gateway", port));
  CHAOS_TRY(fleet.WaitReady(port, "gateway"));

  LoadDriver driver(Load(o, {port}, r.name));
  CHAOS_TRY(WarmUp(o, driver, ticker));
  const auto fault = Clock::now();
  CHAOS_TRY(cluster->Partition(host));
  ticker.Phase(NetnsNatsCluster::ServerName(host) + "'s host cut off (worker-b and its server); 20 s");
  CHAOS_TRY(Sleep(o, 20));
  CHAOS_TRY(cluster->Heal(host));
  ticker.Phase("link back; waiting for worker-b to serve again");
  CHAOS_TRY(fleet.WaitForWorker("worker-b"));
  CHAOS_TRY(Sleep(o, o.after_s));
  Finish(driver, fleet, fault, ticker, &r);
  worker_a.Stop(SIGTERM, std::chrono::seconds(5));
  worker_b.Stop(SIGTERM, std::chrono::seconds(5));
  gateway.Stop(SIGTERM, std::chrono::seconds(5));
  return r;
}

}  // namespace

std::vector<std::string> ScenarioNames() {
  return {"worker_kill",   "runtime_process_kill", "sidecar_kill",      "llamacpp_kill", "nats_restart",
          "gateway_restart", "gateway_kill",       "nats_cluster_kill", "worker_partition"};
}

ScenarioResult RunScenario(const std::string& name, const ScenarioOptions& o) {
  if (name == "worker_kill") return WorkerKill(o);
  if (name == "runtime_process_kill") return RuntimeProcessKill(o);
  if (name == "sidecar_kill") return SidecarKill(o);
  if (name == "llamacpp_kill") return LlamaCppKill(o);
  if (name == "nats_restart") return NatsRestart(o);
  if (name == "gateway_restart") return GatewayRestart(o, false);
  if (name == "gateway_kill") return GatewayRestart(o, true);
  if (name == "nats_cluster_kill") return NatsClusterKill(o);
  if (name == "worker_partition") return WorkerPartition(o);
  ScenarioResult r;
  r.name = name;
  r.error = "no scenario named '" + name + "'";
  return r;
}

}  // namespace shoal::chaos
