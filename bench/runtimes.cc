// The runtimes benchmark (docs/benchmarks.md "Runtimes"): what a runtime
// process costs against the same runtime in the worker's process.
//
//   1. per call: the identity runtime at zero cost, its Model::Encode in
//      this process against the same model in `shoal runtime-host` over the
//      runtime protocol (RemoteRuntime), batches of 1 and 32 items of 384
//      floats — the socket hop and the encoding of both messages, alone;
//   2. at the knee: a cluster (nats-server, a worker, a gateway) serving two
//      zero-cost identity models, one with `process: worker`, one with
//      `process: shared`, each driven closed-loop by 64 connections in turn;
//   3. one encoder in three runtimes: the MiniLM-L6-shaped seeded model
//      (scripts/make-test-models --bench) in the native runtime, and its
//      ONNX and TorchScript exports (scripts/make-test-exports --bench) in
//      the onnx and pytorch sidecars, each called through the runtime
//      contract as the worker calls it (Shoal tokenizes for all three):
//      tokens/s at batch 32 × 128 tokens, f32 everywhere, 2 threads.
// Each measurement is repeated and the median kept. Prints the figures and
// writes docs/bench/runtimes.json.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "common/clock.h"
#include "common/subprocess.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "queue/nats_server.h"
#include "runtime/identity/identity_runtime.h"
#include "runtime/process/remote_runtime.h"
#include "runtime/registry/registry.h"

namespace shoal::bench {
using namespace loadtest;
namespace {

ModelConfig IdentityConfig() {
  ModelConfig c;
  c.id = "bench/identity";
  c.options = RuntimeOptions("identity");
  c.options.Set("dim", int64_t{384});
  return c;
}

// Microseconds per call of `model.Encode` on `batch` items, over `calls` calls.
double UsPerCall(Model& model, size_t batch, int calls) {
  const std::string text = "the quick brown fox jumps over the lazy dog";
  std::vector<EncodeInput> in(batch, EncodeInput{.text = text});
  std::vector<EncodeOutput> out(batch);
  for (int i = 0; i < calls / 10; ++i) (void)model.Encode(in, out);  // warm
  const auto t0 = SteadyClock::now();
  for (int i = 0; i < calls; ++i) {
    if (Status s = model.Encode(in, out); !s.ok()) {
      std::fprintf(stderr, "encode failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  return MicrosSince(t0) / static_cast<double>(calls);
}

int PerCall(const std::string& shoal, int repeats, std::map<std::string, double>* r) {
  IdentityRuntime local_runtime;
  auto local = local_runtime.Load(IdentityConfig(), LoadContext{});
  runtime_process::ProcessOptions o;
  o.name = "identity";
  o.runtime = "identity";
  o.command = {shoal, "--log-level", "warn", "runtime-host", "--runtime", "identity"};
  runtime_process::RemoteRuntime remote_runtime("identity", std::make_shared<runtime_process::RuntimeProcess>(o));
  auto remote = remote_runtime.Load(IdentityConfig(), LoadContext{});
  if (!local.ok() || !remote.ok()) {
    std::fprintf(stderr, "loading failed: %s\n", (local.ok() ? remote.status() : local.status()).ToString().c_str());
    return 1;
  }
  std::printf("[1/3] per call: identity runtime in this process vs in a runtime process (median of %d)\n", repeats);
  for (size_t batch : {size_t{1}, size_t{32}}) {
    std::vector<double> in_process, out_of_process;
    const int calls = batch == 1 ? 20000 : 4000;
    for (int i = 0; i < repeats; ++i) {
      in_process.push_back(UsPerCall(**local, batch, calls));
      out_of_process.push_back(UsPerCall(**remote, batch, calls));
      std::printf("  batch %2zu run %d/%d: in-process %8.2f µs/call   runtime process %8.2f µs/call\n", batch, i + 1,
                  repeats, in_process.back(), out_of_process.back());
      std::fflush(stdout);
    }
    const double a = Median(in_process), b = Median(out_of_process);
    const std::string k = "batch" + std::to_string(batch);
    (*r)[k + "_inprocess_us_per_call"] = a;
    (*r)[k + "_process_us_per_call"] = b;
    (*r)[k + "_overhead_us_per_item"] = (b - a) / static_cast<double>(batch);
  }
  (*r)["socket_overhead_us_per_item"] = (*r)["batch32_overhead_us_per_item"];
  return 0;
}


LoadResult Drive(int port, const std::string& model, int connections, std::chrono::seconds duration) {
  LoadSpec s;
  s.port = port;
  s.path = "/v1/encode/" + model;
  s.content_type = "application/msgpack";
  s.body = OneItemBody("the quick brown fox jumps over the lazy dog");
  s.connections = connections;
  s.duration = duration;
  return RunLoad(s);
}

int AtTheKnee(const std::string& shoal, int repeats, int duration_s, std::map<std::string, double>* r) {
  char tmpl[] = "/tmp/shoal-bench-runtimes-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/models");
  const char* common =
      "runtime: identity\npinned: true\n"
      "batching: {max_batch_tokens: 16384, max_batch_requests: 64, max_batch_wait_ms: 0}\n"
      "identity: {dim: 384}\n";
  std::ofstream(dir + "/models/worker.yaml") << "id: bench/in-worker\nprocess: worker\n" << common;
  std::ofstream(dir + "/models/shared.yaml") << "id: bench/in-process\nprocess: shared\n" << common;
  auto nats = queue::NatsServer::Start({.data_dir = dir + "/nats"});
  if (!nats.ok()) return 1;
  const std::string url = (*nats)->url();
  for (const char* f : {"worker.yaml", "shared.yaml"}) {
    auto add = Subprocess::Spawn({shoal, "models", "--nats", url, "add", dir + "/models/" + f}, dir + "/admin.log");
    if (!add.ok() || add->Stop(0, std::chrono::seconds(30)) != 0) {
      std::fprintf(stderr, "registering %s failed (see %s/admin.log)\n", f, dir.c_str());
      return 1;
    }
  }
  auto port = FreeLoopbackPort();
  auto worker = Subprocess::Spawn({shoal, "--log-level", "warn", "worker", "--nats", url}, dir + "/worker.log");
  auto gateway = Subprocess::Spawn(
      {shoal, "--log-level", "warn", "gateway", "--nats", url, "--port", std::to_string(*port), "--io-threads", "2"},
      dir + "/gateway.log");
  if (!worker.ok() || !gateway.ok() || !WaitAccepting(*port)) return 1;
  // Both models answer before anything is timed.
  for (const char* m : {"bench/in-worker", "bench/in-process"}) {
    for (int i = 0; i < 300 && Drive(*port, m, 1, std::chrono::seconds(1)).ok == 0; ++i) {
    }
  }
  std::printf("\n[2/3] at the knee: 64 connections closed-loop, %d s per run (median of %d)\n", duration_s, repeats);
  std::vector<double> a, b;
  for (int i = 0; i < repeats; ++i) {
    LoadResult w = Drive(*port, "bench/in-worker", 64, std::chrono::seconds(duration_s));
    LoadResult p = Drive(*port, "bench/in-process", 64, std::chrono::seconds(duration_s));
    a.push_back(w.requests_per_s);
    b.push_back(p.requests_per_s);
    std::printf("  run %d/%d: process: worker %8.0f req/s (p50 %.2f ms)   process: shared %8.0f req/s (p50 %.2f ms)\n",
                i + 1, repeats, w.requests_per_s, w.Percentile(50), p.requests_per_s, p.Percentile(50));
    std::fflush(stdout);
  }
  (*r)["knee_worker_req_per_s"] = Median(a);
  (*r)["knee_runtime_process_req_per_s"] = Median(b);
  (*r)["knee_runtime_process_over_worker"] = Median(b) / Median(a);
  gateway->Stop(SIGTERM, std::chrono::seconds(10));
  worker->Stop(SIGTERM, std::chrono::seconds(10));
  (*nats)->Stop();
  std::filesystem::remove_all(dir);
  return 0;
}

// Tokens per second of `model` on `batch` texts of exactly `seq` tokens
// (132 words of the test vocabulary, cut to `seq`), over `calls` calls
// after a warm-up.
double TokensPerSecond(Model& model, size_t batch, uint32_t seq, int calls) {
  std::string text;
  for (int i = 0; i < 12; ++i) text += "the river runs past the old mill and into the town ";
  std::vector<EncodeInput> in(batch, EncodeInput{.text = text, .truncate = true, .normalize = true, .lora = {}});
  std::vector<EncodeOutput> out(batch);
  (void)model.Encode(in, out);
  const auto t0 = SteadyClock::now();
  for (int i = 0; i < calls; ++i) {
    Status s = model.Encode(in, out);
    if (s.ok()) s = out[0].status;
    if (!s.ok() || out[0].tokens != seq) {
      std::fprintf(stderr, "encode failed: %s (%u tokens)\n", s.ToString().c_str(), out[0].tokens);
      std::exit(1);
    }
  }
  return static_cast<double>(batch * seq) * calls / (MicrosSince(t0) / 1e6);
}

int ThreeRuntimes(const std::string& models_dir, int repeats, std::map<std::string, double>* r) {
  const std::string exports =
      std::string(SHOAL_SOURCE_DIR) + "/scripts/make-test-exports " + models_dir + " --bench >&2";
  if (std::system(exports.c_str()) != 0) return 1;
  ModelRuntimes runtimes;
  struct Engine {
    const char* runtime;
    const char* dir;
    std::unique_ptr<Model> model;
    std::vector<double> runs;
  };
  Engine engines[] = {{"native", "minilm-l6", {}, {}}, {"onnx", "minilm-l6-onnx", {}, {}},
                      {"pytorch", "minilm-l6-torchscript", {}, {}}};
  constexpr uint32_t kSeq = 128;
  for (Engine& e : engines) {
    auto spec = ModelSpec::Parse(std::string("id: bench/") + e.runtime + "\nruntime: " + e.runtime + "\npath: " +
                                 models_dir + "/" + e.dir + "\nmax_input_tokens: " + std::to_string(kSeq) + "\n");
    Runtime* runtime = spec.ok() ? runtimes.For(*spec) : nullptr;
    auto model = runtime ? runtime->Load(*ModelConfig::FromSpec(*spec), LoadContext{2})
                         : Result<std::unique_ptr<Model>>(InvalidInput("no runtime"));
    if (!model.ok()) {
      std::fprintf(stderr, "loading %s failed: %s\n", e.dir, model.status().ToString().c_str());
      return 1;
    }
    e.model = std::move(model).value();
  }
  std::printf("\n[3/3] one encoder (MiniLM-L6 shape, f32) in three runtimes: batch 32 x %u tokens, 2 threads "
              "(median of %d)\n", kSeq, repeats);
  for (int i = 0; i < repeats; ++i) {
    std::printf("  run %d/%d:", i + 1, repeats);
    for (Engine& e : engines) {
      e.runs.push_back(TokensPerSecond(*e.model, 32, kSeq, 5));
      std::printf("  %s %8.0f tok/s", e.runtime, e.runs.back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (Engine& e : engines) (*r)[std::string(e.runtime) + "_b32_tokens_per_s"] = Median(e.runs);
  (*r)["native_over_onnx"] = (*r)["native_b32_tokens_per_s"] / (*r)["onnx_b32_tokens_per_s"];
  (*r)["native_over_pytorch"] = (*r)["native_b32_tokens_per_s"] / (*r)["pytorch_b32_tokens_per_s"];
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  CLI::App app{"Shoal runtimes benchmark: a runtime process against the same runtime in the worker"};
  std::string shoal = SHOAL_BINARY, out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/runtimes.json";
  std::string models_dir;
  int repeats = 5, duration_s = 5;
  app.add_option("--shoal", shoal, "the shoal binary")->capture_default_str();
  app.add_option("--out", out, "JSON results (empty: none)")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per measurement (median kept)")->capture_default_str();
  app.add_option("--duration-s", duration_s, "seconds per run at the knee")->capture_default_str();
  app.add_option("--models-dir", models_dir, "where the bench models are generated (default: build-models)");
  CLI11_PARSE(app, argc, argv);
  std::map<std::string, double> r;
  if (int rc = shoal::bench::PerCall(shoal, repeats, &r); rc != 0) return rc;
  if (int rc = shoal::bench::AtTheKnee(shoal, repeats, duration_s, &r); rc != 0) return rc;
  const std::string models = shoal::bench::GenerateBenchModels(SHOAL_SOURCE_DIR, models_dir, "runtimes");
  if (models.empty()) return 1;
  if (int rc = shoal::bench::ThreeRuntimes(models, repeats, &r); rc != 0) return rc;
  std::printf("\nresult (medians)\n");
  std::printf("  per call, batch 1:   in-process %.2f µs, runtime process %.2f µs: %.2f µs added per item\n",
              r["batch1_inprocess_us_per_call"], r["batch1_process_us_per_call"], r["batch1_overhead_us_per_item"]);
  std::printf("  per call, batch 32:  in-process %.2f µs, runtime process %.2f µs: %.2f µs added per item\n",
              r["batch32_inprocess_us_per_call"], r["batch32_process_us_per_call"], r["batch32_overhead_us_per_item"]);
  std::printf("  at the knee:         process: worker %.0f req/s, process: shared %.0f req/s (ratio %.2f)\n",
              r["knee_worker_req_per_s"], r["knee_runtime_process_req_per_s"], r["knee_runtime_process_over_worker"]);
  std::printf("  one encoder, b32 x 128: native %.0f tok/s, onnx %.0f tok/s, pytorch %.0f tok/s "
              "(native/onnx %.2f, native/pytorch %.2f)\n",
              r["native_b32_tokens_per_s"], r["onnx_b32_tokens_per_s"], r["pytorch_b32_tokens_per_s"],
              r["native_over_onnx"], r["native_over_pytorch"]);
  if (!out.empty()) shoal::bench::WriteFigures(out, r);
  return 0;
}
