// The upstream benchmark (issue 22; docs/benchmarks.md "Upstream"): Shoal
// in front of llama-server against llama-server alone, same server, same
// GGUF, same threads, at the knee (closed loop, many clients):
//
//   embeddings  the MiniLM-L6-shaped seeded encoder (minilm-l6-gguf-f32) in
//               `llama-server --embeddings`; --connections clients each send
//               one text per request, to llama-server's /v1/embeddings or
//               to the gateway's, whose worker batches the requests it
//               pulls into one upstream call each (max_batch_requests 32) —
//               and, to show what that batching buys, a second model on the
//               same upstream with batches of one;
//   generation  qwen3-bench Q8_0 in llama-server (--parallel as the top
//               concurrency); C clients each stream --requests greedy
//               completions of --new-tokens tokens one after another
//               (bench/generation_load.h), at each C: closed loop, so a
//               run measures the knee more than the ramp of C prompts
//               arriving at once. Beside tokens/s it prints TTFT and ITL
//               and the CPU each process spends per token generated — the
//               server, this process (the clients; through Shoal also the
//               gateway and the worker) and nats-server — so what relaying
//               a token costs is a figure, not a guess.
//
// Each figure is the median of --repeats runs. Everything shares the
// machine's cores: llama-server, and (for Shoal) nats-server, the gateway
// and the worker in this process. Writes docs/bench/upstream.json.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/model_directory.h"
#include "bench_cluster.h"
#include "bench_options.h"
#include "common/subprocess.h"
#include "figures.h"
#include "generation_load.h"
#include "loadtest/load_generator.h"
#include "process_cpu.h"
#include "support/http_client.h"

namespace shoal::bench {
namespace {

using nlohmann::json;

const char* kText = "The river runs past the old mill and into the town, where people stop on the bridge.";
// llama-server answers 500 when a completion is not valid UTF-8, which the
// seeded model's random weights may produce: the benchmark takes the first
// of these prompts it completes.
const char* kPrompts[] = {
    "The river runs past the old mill and into the town, where people stop on the bridge to watch the fish "
    "in the water below.",
    "A worker pulls a batch of requests from the queue, runs them together on its device and answers each.",
    "Tell me about the school of small fish that swims under the bridge every morning in the spring.",
    "Good tools are simple to use, easy to mend and last for many years of honest work in the kitchen.",
};

std::string FirstPromptAnswered(int port, const std::string& model, int tokens) {
  for (const char* p : kPrompts) {
    testing::HttpClient http(port, 60000);
    auto r = http.PostJson("/v1/completions", json{{"model", model}, {"prompt", p}, {"max_tokens", tokens},
                                                   {"temperature", 0}, {"ignore_eos", true}}.dump());
    if (r.ok() && r->status == 200) return p;
  }
  return "";
}

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/upstream.json";
  std::string models_dir;
  std::string llama_server = SHOAL_LLAMA_SERVER;
  int repeats = 3;
  int duration_s = 8;
  int connections = 32;
  std::vector<int> concurrency = {8, 32};
  int new_tokens = 32;
  int requests = 4;  // streamed completions per client per run, one after another
  int threads = 2;
  int poll = 50;  // llama-server's own default
  // The Shoal embedder's max_batch_requests: the server's --parallel, as
  // docs/architecture.md advises (a batch answers when its last call does).
  int embed_batch = 8;
};

// llama-server on `gguf` as `alias`, on a free port, until it is stopped.
struct Server {
  std::unique_ptr<Subprocess> process;
  int port = 0;

  bool Start(const Options& o, const std::string& gguf, const std::string& alias, std::vector<std::string> args,
             const std::string& log) {
    auto p = FreeLoopbackPort();
    if (!p.ok()) return false;
    port = *p;
    std::vector<std::string> argv = {o.llama_server, "-m", gguf, "--alias", alias, "--host", "127.0.0.1",
                                     "--port", std::to_string(port), "--threads", std::to_string(o.threads),
                                     "--threads-batch", std::to_string(o.threads), "--poll", std::to_string(o.poll),
                                     "--no-webui"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto s = Subprocess::Spawn(argv, log);
    if (!s.ok()) return false;
    process = std::make_unique<Subprocess>(std::move(s).value());
    for (int i = 0; i < 600; ++i) {  // /health is 503 while the model loads
      testing::HttpClient http(port, 1000);
      auto r = http.Get("/health");
      if (r.ok() && r->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::fprintf(stderr, "upstream: llama-server did not come up (see %s)\n", log.c_str());
    return false;
  }
  ~Server() {
    if (process) process->Stop(SIGTERM, std::chrono::seconds(10));
  }
};

double EmbeddingsPerSecond(int port, const std::string& model, const Options& o) {
  loadtest::LoadSpec s;
  s.port = port;
  s.path = "/v1/embeddings";
  s.content_type = "application/json";
  s.body = json{{"model", model}, {"input", kText}}.dump();
  s.connections = o.connections;
  s.duration = std::chrono::seconds(o.duration_s);
  const loadtest::LoadResult r = loadtest::RunLoad(s);
  if (r.errors) std::fprintf(stderr, "upstream: %llu errors on %s\n", static_cast<unsigned long long>(r.errors), model.c_str());
  return r.requests_per_s;
}

int Run(const Options& o) {
  if (!std::filesystem::exists(o.llama_server)) {
    std::fprintf(stderr, "upstream: building llama-server (scripts/build-llama-server)\n");
    const std::string build = std::filesystem::path(o.llama_server).parent_path().parent_path().parent_path();
    if (std::system((o.source_dir + "/scripts/build-llama-server " + build + " >&2").c_str()) != 0 ||
        !std::filesystem::exists(o.llama_server)) {
      std::fprintf(stderr, "upstream: no llama-server at %s\n", o.llama_server.c_str());
      return 1;
    }
  }
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr, "upstream: generating minilm-l6 and qwen3-bench and their GGUFs in %s (once)\n", models.c_str());
  if (std::system((o.source_dir + "/scripts/make-test-models " + models + " --bench --only minilm-l6,qwen3-bench >&2 && " +
                   o.source_dir + "/scripts/make-test-gguf " + models + " --bench >&2").c_str()) != 0) {
    return 1;
  }
  const std::string embedder = models + "/minilm-l6-gguf-f32/minilm-l6-F32.gguf";
  const std::string generator = models + "/qwen3-bench-gguf-q8_0/qwen3-bench-Q8_0.gguf";
  char tmpl[] = "/tmp/shoal-bench-upstream-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const int top = *std::max_element(o.concurrency.begin(), o.concurrency.end());

  Server emb, gen;
  std::fprintf(stderr, "upstream: starting llama-server twice (embeddings, generation)\n");
  if (!emb.Start(o, embedder, "minilm", {"--embeddings", "--pooling", "mean", "-c", "8192", "-b", "8192", "-ub",
                                         "8192", "--parallel", "8"}, dir + "/embeddings.log") ||
      !gen.Start(o, generator, "qwen3", {"-c", std::to_string(top * 256), "--parallel", std::to_string(top)},
                 dir + "/generation.log")) {
    return 1;
  }
  auto url = [](int port) { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; };
  const std::string profiles[] = {
      "id: bench/minilm\nruntime: upstream\ntask: encode\npinned: true\n"
      "batching: {max_batch_requests: " + std::to_string(o.embed_batch) +
          ", max_batch_wait_ms: 2}\nupstream: {base_url: " + url(emb.port) +
          ", model: minilm}\n",
      "id: bench/minilm-unbatched\nruntime: upstream\ntask: encode\npinned: true\n"
      "batching: {max_batch_requests: 1, max_batch_wait_ms: 0}\nupstream: {base_url: " + url(emb.port) +
          ", model: minilm}\n",
      "id: bench/qwen3\nruntime: upstream\ntask: generate\npinned: true\nqueue: {ack_wait_ms: 60000}\n"
      "batching: {max_batch_requests: " + std::to_string(top) + "}\nupstream: {base_url: " + url(gen.port) +
          ", model: qwen3}\n"};
  std::vector<ModelSpec> specs;
  for (const std::string& p : profiles) {
    auto spec = ModelSpec::Parse(p);
    if (!spec.ok()) return std::fprintf(stderr, "%s\n", spec.status().ToString().c_str()), 1;
    specs.push_back(*spec);
  }
  worker::WorkerOptions wo;
  wo.executors = 4;  // upstream calls wait on the network, not on these cores
  auto cluster = BenchCluster::Start("upstream", dir + "/nats", specs, wo);
  if (!cluster) return 1;
  const int port = cluster->port();
  std::map<std::string, double> figures;

  std::printf("Shoal in front of llama-server against llama-server alone, %d threads, median of %d\n", o.threads,
              o.repeats);
  std::printf("embeddings (minilm-l6 F32, %d clients closed-loop, one text each, %d s runs, up to %d a call):\n",
              o.connections, o.duration_s, o.embed_batch);
  std::vector<double> bare, batched, unbatched;
  {  // warm: the server's first requests allocate its buffers
    Options warm = o;
    warm.duration_s = 2;
    for (const auto& [p, m] : {std::pair{emb.port, "minilm"}, {port, "bench/minilm"}, {port, "bench/minilm-unbatched"}}) {
      EmbeddingsPerSecond(p, m, warm);
    }
  }
  for (int i = 0; i < o.repeats; ++i) {
    std::fprintf(stderr, "upstream: embeddings, run %d/%d\n", i + 1, o.repeats);
    bare.push_back(EmbeddingsPerSecond(emb.port, "minilm", o));
    batched.push_back(EmbeddingsPerSecond(port, "bench/minilm", o));
    unbatched.push_back(EmbeddingsPerSecond(port, "bench/minilm-unbatched", o));
    std::printf("  run %d/%d: bare %7.1f req/s   shoal %7.1f req/s   shoal, batches of one %7.1f req/s\n", i + 1,
                o.repeats, bare.back(), batched.back(), unbatched.back());
    std::fflush(stdout);
  }
  figures["embed_bare_req_per_s"] = Median(bare);
  figures["embed_shoal_req_per_s"] = Median(batched);
  figures["embed_shoal_unbatched_req_per_s"] = Median(unbatched);
  figures["upstream_embed_knee_over_bare"] = Median(batched) / Median(bare);
  figures["upstream_embed_batching_gain"] = Median(batched) / Median(unbatched);

  const std::string prompt = FirstPromptAnswered(gen.port, "qwen3", o.new_tokens);
  if (prompt.empty()) return std::fprintf(stderr, "upstream: llama-server completes none of the prompts\n"), 1;
  std::printf("generation (qwen3-bench Q8_0, %d completions a client of %d new tokens, greedy, streamed; "
              "Shoal / alone):\n", o.requests, o.new_tokens);
  std::printf("  %-5s %14s %14s %7s\n", "conc", "shoal tok/s", "bare tok/s", "ratio");
  for (int c : o.concurrency) {
    RunRound(gen.port, "qwen3", prompt, c, 1, 8);  // warm both at this concurrency
    RunRound(port, "bench/qwen3", prompt, c, 1, 8);
    // CPU µs per token generated, by process: the server, this process
    // (the clients; through Shoal also the gateway and the worker), and
    // nats-server.
    struct Side {
      std::vector<double> tokens_per_s, ttft, itl, server_us, self_us, nats_us;
    } s, b;
    auto round = [&](Side* side, int p, const char* model) {
      const double server0 = CpuSeconds(gen.process->pid()), self0 = CpuSeconds(getpid()),
                   nats0 = CpuSeconds(cluster->nats_pid());
      const Round r = RunRound(p, model, prompt, c, o.requests, o.new_tokens);
      const double per_token = 1e6 / std::max(1.0, r.tokens_per_s * r.seconds);
      side->tokens_per_s.push_back(r.tokens_per_s);
      side->ttft.push_back(Percentile(r.ttft_ms, 0.5));
      side->itl.push_back(Percentile(r.itl_ms, 0.5));
      side->server_us.push_back((CpuSeconds(gen.process->pid()) - server0) * per_token);
      side->self_us.push_back((CpuSeconds(getpid()) - self0) * per_token);
      side->nats_us.push_back((CpuSeconds(cluster->nats_pid()) - nats0) * per_token);
    };
    for (int i = 0; i < o.repeats; ++i) {
      std::fprintf(stderr, "upstream: generation concurrency %d, run %d/%d\n", c, i + 1, o.repeats);
      round(&b, gen.port, "qwen3");
      round(&s, port, "bench/qwen3");
    }
    std::printf("  %-5d %14.1f %14.1f %6.2fx   TTFT p50 %.1f / %.1f ms, ITL p50 %.2f / %.2f ms\n", c,
                Median(s.tokens_per_s), Median(b.tokens_per_s), Median(s.tokens_per_s) / Median(b.tokens_per_s),
                Median(s.ttft), Median(b.ttft), Median(s.itl), Median(b.itl));
    std::printf("        CPU per token (µs): llama-server %.0f / %.0f, this process %.0f / %.0f, nats-server %.0f\n",
                Median(s.server_us), Median(b.server_us), Median(s.self_us), Median(b.self_us), Median(s.nats_us));
    std::fflush(stdout);
    const std::string k = "generate_c" + std::to_string(c);
    figures[k + "_shoal_tokens_per_s"] = Median(s.tokens_per_s);
    figures[k + "_bare_tokens_per_s"] = Median(b.tokens_per_s);
    figures[k + "_over_bare"] = Median(s.tokens_per_s) / Median(b.tokens_per_s);
    figures[k + "_relay_cpu_us_per_token"] = Median(s.self_us) - Median(b.self_us) + Median(s.nats_us);
    figures[k + "_server_cpu_us_per_token"] = Median(b.server_us);
  }
  figures["upstream_generate_knee_over_bare"] = figures["generate_c" + std::to_string(top) + "_over_bare"];
  figures["upstream_knee_over_bare"] =
      std::min(figures["upstream_embed_knee_over_bare"], figures["upstream_generate_knee_over_bare"]);
  std::printf("upstream_knee_over_bare %.2f (embeddings %.2f, generation at %d %.2f; target >= 1.0); "
              "cross-request batching buys %.2fx on embeddings\n",
              figures["upstream_knee_over_bare"], figures["upstream_embed_knee_over_bare"], top,
              figures["upstream_generate_knee_over_bare"], figures["upstream_embed_batching_gain"]);
  cluster.reset();
  std::filesystem::remove_all(dir);
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Shoal in front of llama-server against llama-server alone"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--llama-server", o.llama_server, "the llama-server binary");
  app.add_option("--duration-s", o.duration_s, "seconds per embeddings run");
  app.add_option("--connections", o.connections, "embedding clients");
  app.add_option("--concurrency", o.concurrency, "generation client counts")->delimiter(',');
  app.add_option("--new-tokens", o.new_tokens, "tokens per generation");
  app.add_option("--requests", o.requests, "streamed completions each generation client sends per run");
  app.add_option("--threads", o.threads, "llama-server threads");
  app.add_option("--poll", o.poll, "how hard its threads poll for work (0-100; llama-server's --poll)");
  app.add_option("--embed-batch", o.embed_batch, "requests per upstream /embeddings call through Shoal");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
