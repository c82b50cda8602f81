// Runtimes in processes of their own (docs/runtime-protocol.md): the
// conformance suite against the hosted identity and native runtimes (and
// against something that is not a runtime), the supervisor's answers to a
// runtime that dies, hangs, lies or grows, and a model served through
// gateway → JetStream → worker → runtime process with that process
// SIGKILLed under load.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/identity/identity_runtime.h"
#include "runtime/native/native_runtime.h"
#include "runtime/process/conformance.h"
#include "runtime/process/remote_runtime.h"
#include "runtime/process/runtime_process.h"
#include "support/child_processes.h"
#include "support/http_client.h"
#include "support/identity_clients.h"
#include "support/metrics_text.h"
#include "support/model_configs.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

using runtime_process::CheckResult;
using runtime_process::ConformanceOptions;
using runtime_process::ConformanceTarget;
using runtime_process::ProcessOptions;
using runtime_process::RemoteRuntime;
using runtime_process::RuntimeProcess;

std::vector<std::string> HostCommand(const std::string& runtime) {
  return {SHOAL_BINARY, "runtime-host", "--runtime", runtime};
}

ModelConfig IdentityConfig(const std::string& options = "{dim: 8}") {
  return Config("id: t/identity\nruntime: identity\nmax_input_tokens: 16\nidentity: " + options + "\n");
}

ModelConfig NativeConfig() {
  return Config("id: t/bert\nruntime: native\npath: " + kModels + "/bert-tiny-mean\n");
}

std::vector<CheckResult> Check(const ConformanceTarget& target, std::optional<ModelConfig> model) {
  ConformanceOptions o;
  o.model = std::move(model);
  return runtime_process::RunConformance(target, o, [](const CheckResult&) {});
}

void ExpectAllPassed(const std::vector<CheckResult>& results, size_t at_least) {
  EXPECT_GE(results.size(), at_least);
  for (const auto& r : results) {
    EXPECT_TRUE(r.status.ok()) << r.name << ": " << r.status.message();
    EXPECT_FALSE(r.skipped) << r.name;
  }
}

TEST(RuntimeCheck, TheHostedRuntimesPass) {
  ExpectAllPassed(Check({.command = HostCommand("identity")}, IdentityConfig()), 12);
  ExpectAllPassed(Check({.command = HostCommand("native")}, NativeConfig()), 12);
}

TEST(RuntimeCheck, TheCommandPassesAListeningHostAndFailsAnEcho) {
  // `shoal runtime-check SOCKET`: a host listening on a path.
  char dir_template[] = "/tmp/shoal-rt-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string socket = dir + "/identity.sock";
  auto host = Subprocess::Spawn({SHOAL_BINARY, "runtime-host", "--runtime", "identity", "--listen", socket});
  ASSERT_TRUE(host.ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(socket); }));
  const std::string profile = dir + "/identity.yaml";
  {
    std::FILE* f = std::fopen(profile.c_str(), "w");
    std::fputs("id: t/identity\nruntime: identity\nmax_input_tokens: 16\nidentity: {dim: 8}\n", f);
    std::fclose(f);
  }
  auto run = [](const std::string& command, std::string* out) {
    std::FILE* p = popen(command.c_str(), "r");
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) *out += buf;
    return WEXITSTATUS(pclose(p));
  };
  std::string out;
  EXPECT_EQ(run(std::string(SHOAL_BINARY) + " runtime-check " + socket + " --profile " + profile + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("every check passed"), std::string::npos) << out;
  EXPECT_NE(out.find("ok   encode batch"), std::string::npos) << out;
  EXPECT_EQ(host->Stop(0, std::chrono::seconds(10)), 0) << "the host exits by itself after stop";

  // Something that is not a runtime: it echoes what it is sent.
  out.clear();
  EXPECT_EQ(run(std::string(SHOAL_BINARY) + " runtime-check --timeout-s 5 -- sh -c 'exec cat <&3 >&3' 2>&1", &out), 1)
      << out;
  EXPECT_NE(out.find("FAIL hello"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// A supervisor for `runtime` (hosted by shoal), watched every `every`.
std::shared_ptr<RuntimeProcess> Supervised(const std::string& runtime, MetricsRegistry* metrics,
                                           uint64_t headroom = uint64_t{1} << 30,
                                           const std::string& claims = "",
                                           std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  ProcessOptions o;
  o.name = runtime;
  o.runtime = claims.empty() ? runtime : claims;
  o.command = HostCommand(runtime);
  o.health_every = every;
  o.health_timeout = std::chrono::milliseconds(2000);
  o.memory_headroom_bytes = headroom;
  o.deaths = &metrics->AddCounter("deaths", "", {"runtime", "reason"});
  return std::make_shared<RuntimeProcess>(std::move(o));
}

double Deaths(MetricsRegistry& m, const std::string& runtime, const std::string& reason) {
  return m.AddCounter("deaths", "", {"runtime", "reason"}).With({runtime, reason}).value();
}

Status EncodeOne(Model& model, const std::string& text, std::vector<float>* dense = nullptr) {
  std::vector<EncodeInput> in = {{.text = text}};
  std::vector<EncodeOutput> out(1);
  SHOAL_RETURN_IF_ERROR(model.Encode(in, out));
  if (dense) *dense = out[0].dense;
  return out[0].status;
}

TEST(RuntimeSupervision, AProcessKilledMidBatchFailsItsCallsAndComesBackWithItsModels) {
  MetricsRegistry metrics;
  // No health checks: the only call in flight below is the batch.
  auto process = Supervised("identity", &metrics, uint64_t{1} << 30, "", std::chrono::hours(1));
  RemoteRuntime runtime("identity", process);
  auto model = runtime.Load(IdentityConfig("{dim: 8, us_per_batch: 3000000}"), LoadContext{});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const pid_t first = process->pid();
  ASSERT_GT(first, 0);

  // A batch of 3 s in flight; the process dies under it.
  Status in_flight;
  std::thread call([&] { in_flight = EncodeOne(**model, "a b c"); });
  ASSERT_TRUE(WaitFor([&] {
    auto c = process->Current();
    return c && c->client->calls_in_flight() == 1;
  }));
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  call.join();
  EXPECT_EQ(in_flight.code(), Code::kNoCapacity) << in_flight.ToString();

  // The next call runs in a new process (started at once after a first
  // death), which the model was loaded into again.
  Status after = Status(Code::kNoCapacity, "");
  ASSERT_TRUE(WaitFor([&] {
    after = EncodeOne(**model, "x");
    return after.code() != Code::kNoCapacity;
  }));
  EXPECT_TRUE(after.ok()) << after.ToString();
  EXPECT_NE(process->pid(), first);
  EXPECT_EQ(process->starts(), 2u);
  EXPECT_EQ(Deaths(metrics, "identity", "exited"), 1);
}

TEST(RuntimeSupervision, AHungProcessIsKilledAndCounted) {
  MetricsRegistry metrics;
  auto process = Supervised("identity", &metrics);
  runtime_process::CallTimeouts timeouts;
  timeouts.call = std::chrono::milliseconds(300);
  RemoteRuntime runtime("identity", process, timeouts);
  auto model = runtime.Load(IdentityConfig("{dim: 8, us_per_batch: 5000000}"), LoadContext{});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const pid_t pid = process->pid();
  Status s = EncodeOne(**model, "a");
  EXPECT_EQ(s.code(), Code::kNoCapacity) << s.ToString();
  EXPECT_TRUE(WaitFor([&] { return Deaths(metrics, "identity", "hung") == 1; }));
  EXPECT_TRUE(WaitFor([&] { return ::kill(pid, 0) != 0; })) << "the hung process is gone";
}

TEST(RuntimeSupervision, ARuntimeThatIsNotTheOneAskedForIsRefused) {
  MetricsRegistry metrics;
  auto process = Supervised("identity", &metrics, uint64_t{1} << 30, /*claims=*/"native");
  RemoteRuntime runtime("native", process);
  auto model = runtime.Load(IdentityConfig(), LoadContext{});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(model.status().message().find("it says it is the 'identity' runtime, not 'native'"), std::string::npos)
      << model.status().ToString();
  EXPECT_EQ(Deaths(metrics, "native", "protocol"), 1);
  EXPECT_EQ(process->pid(), -1);
}

TEST(RuntimeSupervision, ACommandThatCannotRunIsNamedInTheError) {
  MetricsRegistry metrics;
  ProcessOptions o;
  o.name = o.runtime = "identity";
  o.command = {"/nonexistent/shoal-runtime"};
  o.deaths = &metrics.AddCounter("deaths", "", {"runtime", "reason"});
  RemoteRuntime runtime("identity", std::make_shared<RuntimeProcess>(std::move(o)));
  auto model = runtime.Load(IdentityConfig(), LoadContext{});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(model.status().message().find("did not start: cannot run /nonexistent/shoal-runtime: No such file"),
            std::string::npos)
      << model.status().ToString();
}

TEST(RuntimeSupervision, AProcessOverItsMemoryIsKilled) {
  MetricsRegistry metrics;
  // No headroom: what the native runtime allocates past its hello and its
  // model's reported bytes (scratch, the kernels' code) is over the limit.
  auto process = Supervised("native", &metrics, /*headroom=*/0);
  RemoteRuntime runtime("native", process);
  // The watcher may find it over while it loads (the load then fails, is
  // tried once more in a new process, which may be killed too) or after;
  // either way it is killed for its memory.
  auto model = runtime.Load(NativeConfig(), LoadContext{});
  if (model.ok()) (void)EncodeOne(**model, "the river runs past the old mill");
  EXPECT_TRUE(WaitFor([&] { return Deaths(metrics, "native", "memory") >= 1; }));
}

TEST(RuntimeSupervision, TheProcessStopsWhenItsLastModelLeaves) {
  MetricsRegistry metrics;
  auto process = Supervised("identity", &metrics);
  RemoteRuntime runtime("identity", process);
  auto a = runtime.Load(IdentityConfig(), LoadContext{});
  auto b = runtime.Load(IdentityConfig("{dim: 4}"), LoadContext{});
  ASSERT_TRUE(a.ok() && b.ok());
  const pid_t pid = process->pid();
  EXPECT_EQ(process->starts(), 1u) << "one process holds both";
  std::vector<float> v;
  ASSERT_TRUE(EncodeOne(**b, "x y", &v).ok());
  EXPECT_EQ(v, IdentityVector(IdentityTokens("x y"), 4, true));
  a->reset();
  EXPECT_EQ(::kill(pid, 0), 0) << "still holds b";
  b->reset();
  EXPECT_EQ(process->pid(), -1);
  EXPECT_TRUE(WaitFor([&] { return ::kill(pid, 0) != 0; }));
  EXPECT_EQ(Deaths(metrics, "identity", "exited"), 0) << "a stop is no death";
}

// Extract through a runtime process: the request and reply over the
// socket carry what the runtime in this process answers, options and
// per-item errors included.
TEST(RuntimeSupervision, ExtractInARuntimeProcessAnswersAsInThisOne) {
  MetricsRegistry metrics;
  auto process = Supervised("native", &metrics);
  RemoteRuntime remote("native", process);
  const ModelConfig config = Config("id: t/ner\nruntime: native\ntask: extract\npath: " + kModels + "/bert-ner-tiny\n");
  auto there = remote.Load(config, LoadContext{1});
  ASSERT_TRUE(there.ok()) << there.status().ToString();
  NativeRuntime native;
  auto here = native.Load(config, LoadContext{1});
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  const std::vector<ExtractInput> in = {
      {.text = "Ada Lovelace met Charles Babbage in London", .truncate = false, .lora = {},
       .aggregation = Aggregation::kFirst, .top_k = 0},
      {.text = "S\xC3\xA3o Paulo", .truncate = true, .lora = {}, .aggregation = {}, .top_k = 0},
      {.text = "Ada", .truncate = false, .lora = {}, .aggregation = {}, .top_k = 3}};
  std::vector<ExtractOutput> got(in.size()), want(in.size());
  ASSERT_TRUE((*there)->Extract(in, got).ok());
  ASSERT_TRUE((*here)->Extract(in, want).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(got[i].status.code(), want[i].status.code()) << i;
    EXPECT_EQ(got[i].status.message(), want[i].status.message()) << i;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
    ASSERT_EQ(got[i].entities.size(), want[i].entities.size()) << i;
    for (size_t k = 0; k < got[i].entities.size(); ++k) {
      EXPECT_EQ(got[i].entities[k].label, want[i].entities[k].label);
      EXPECT_EQ(got[i].entities[k].score, want[i].entities[k].score);
      EXPECT_EQ(got[i].entities[k].start, want[i].entities[k].start);
      EXPECT_EQ(got[i].entities[k].end, want[i].entities[k].end);
      EXPECT_EQ(got[i].entities[k].text, want[i].entities[k].text);
    }
  }
  EXPECT_FALSE(got[0].entities.empty());
  EXPECT_EQ(got[2].status.code(), Code::kInvalidInput) << "top_k to a token classifier, refused over there too";
}

TEST(RuntimeProcessServing, ThroughTheQueueWithItsProcessKilledUnderLoadLosesNothing) {
  TestCluster cluster;
  // Batches of 40 ms back to back (8 clients, 4 a batch): the process is
  // nearly always inside one, so the kill lands in a batch even on a loaded
  // machine (at 10 ms, a run under `ctest -j2` once found it between two).
  cluster.Register(IdentityProfile("test/remote", "process: shared\n"
                                                  "identity: {dim: 8, us_per_batch: 40000}\n"
                                                  "batching: {max_batch_requests: 4}\n"));
  worker::WorkerOptions wo;
  wo.runtime_processes.health_every = std::chrono::milliseconds(50);
  auto worker = cluster.StartWorkerWith(wo);
  ASSERT_TRUE(worker);
  cluster.WaitForWorkers("test/remote", 1);
  ASSERT_EQ(ChildProcesses(getpid(), "runtime-host").size(), 1u) << "the pinned model loaded into a runtime process";
  gateway::GatewayOptions go;
  go.default_timeout = std::chrono::seconds(30);
  auto gateway = cluster.StartGateway(go);
  ASSERT_TRUE(gateway);

  IdentityClients clients(gateway->port(), "test/remote", 8, 25);
  // A quarter in, the runtime process dies with batches in it.
  ASSERT_TRUE(WaitFor([&] { return clients.done() >= clients.total() / 4; }));
  const auto hosts = ChildProcesses(getpid(), "runtime-host");
  ASSERT_EQ(hosts.size(), 1u);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(hosts[0], SIGKILL), 0);
  clients.Join();
  EXPECT_TRUE(clients.failures().empty()) << clients.failures().size() << " failed, first: "
                                          << clients.failures().front();
  EXPECT_EQ(clients.correct(), clients.total()) << "lost 0, every vector right";
  const std::string page = worker->RenderMetrics();
  EXPECT_EQ(MetricValue(page, R"(shoal_runtime_process_deaths_total{runtime="identity",reason="exited"})"), 1);
  const double lost =
      MetricValue(page, R"(shoal_worker_items_total{model="test/remote",outcome="runtime_lost"})").value_or(0);
  EXPECT_GE(lost, 1) << "the batches in the process went back to the queue";
  std::printf("runtime process SIGKILLed under load: %d/%d answered right, %.0f items put back, all done %.2f s "
              "after the kill\n",
              clients.correct(), clients.total(), lost,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
}

}  // namespace
}  // namespace shoal::testing
