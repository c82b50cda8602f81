// The generation benchmark (issue 6): a Qwen3-shaped generator of 44 M
// parameters (scripts/make-test-models --bench: qwen3-bench, the real Qwen3
// tokenizer, hidden 256, 6 layers, tied 151,936-row head) served through the
// whole path — gateway, JetStream, a worker's continuous batching — against
// the Python reference's own generate loop with a KV cache
// (tests/reference/decoder_reference.py bench: float32 torch, one static
// batch) on the same weights, on this machine, in the same run.
//
// Workload: at each concurrency C, C clients each send --requests streamed
// /v1/completions requests one after another: the same ~32-token prompt,
// greedy, ignore_eos, --new-tokens tokens. Aggregate output tokens/s is all
// generated tokens over the wall time of the round; TTFT is measured at the
// client (request sent → first token event), ITL between token events. The
// reference generates C sequences of the same prompt length in one batch.
//
// In-process: nats-server is a child; gateway, worker and clients share
// this process (and the machine's cores, as the reference does alone).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_cluster.h"
#include "figures.h"
#include "generation_load.h"
#include "support/http_client.h"

namespace shoal::bench {
namespace {

using nlohmann::json;

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/generation.json";
  std::string models_dir;
  std::vector<int> concurrency = {1, 8, 32, 64};
  int requests = 2;      // per client per concurrency
  int new_tokens = 64;
  bool reference = true;
  bool bf16 = true;  // also the same model with bf16 weights, at 32
};

const char* kPrompt =
    "The river runs past the old mill and into the town, where people stop on the bridge to watch the fish "
    "in the water below.";

// The reference's aggregate tokens/s at `concurrency`; NAN on failure.
json Reference(const Options& o, const std::string& model_dir, int concurrency, int prompt_tokens) {
  const std::string cmd = "/usr/bin/python3 " + o.source_dir + "/tests/reference/decoder_reference.py bench " +
                          model_dir + " --concurrency " + std::to_string(concurrency) + " --prompt-tokens " +
                          std::to_string(prompt_tokens) + " --new-tokens " + std::to_string(o.new_tokens);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (::pclose(p) != 0) return {};
  return json::parse(out, nullptr, false);
}

int Run(const Options& o) {
  const std::string models = GenerateBenchModels(o.source_dir, o.models_dir, "generation");
  if (models.empty()) return 1;
  const std::string model_dir = models + "/qwen3-bench";
  std::vector<ModelSpec> specs;
  for (const char* precision : {"f32", "bf16"}) {
    ModelSpec spec;
    spec.id = std::string("bench/qwen3-") + precision;
    spec.runtime = "native";
    spec.task = Task::kGenerate;
    spec.path = model_dir;
    spec.pinned = true;
    spec.batching.max_batch_requests = 64;
    spec.batching.max_batch_tokens = 512;
    spec.queue.ack_wait_ms = 60000;
    spec.runtime_options_json = std::string(R"({"max_context": 1024, "precision": ")") + precision + "\"}";
    specs.push_back(spec);
    if (!o.bf16) break;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("shoal-generation-bench-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("generation", dir, specs, {});
  if (!cluster) return 1;
  const int port = cluster->port();
  std::mutex mu;
  Round warm;
  StreamOne(port, "bench/qwen3-f32", kPrompt, 8, &warm, &mu);  // first-use costs (primitive creation) out of the way

  std::printf("%-6s %12s %12s %8s %10s %10s %9s %9s\n", "conc", "shoal tok/s", "ref tok/s", "ratio", "TTFT p50",
              "TTFT p99", "ITL p50", "ITL p99");
  std::map<std::string, double> figures;
  std::map<int, double> shoal_tps, ref_tps;
  for (int c : o.concurrency) {
    std::fprintf(stderr, "generation: concurrency %d: shoal...\n", c);
    const Round r = RunRound(port, "bench/qwen3-f32", kPrompt, c, o.requests, o.new_tokens);
    double ref = NAN;
    if (o.reference) {
      std::fprintf(stderr, "generation: concurrency %d: reference...\n", c);
      const json j = Reference(o, model_dir, c, std::max(1, r.prompt_tokens));
      if (j.is_object()) ref = j["tokens_per_s"];
    }
    shoal_tps[c] = r.tokens_per_s;
    ref_tps[c] = ref;
    std::printf("%-6d %12.1f %12.1f %7.2fx %8.1fms %8.1fms %7.1fms %7.1fms%s\n", c, r.tokens_per_s, ref,
                r.tokens_per_s / ref, Percentile(r.ttft_ms, 0.5), Percentile(r.ttft_ms, 0.99),
                Percentile(r.itl_ms, 0.5), Percentile(r.itl_ms, 0.99),
                r.errors ? (" (" + std::to_string(r.errors) + " errors)").c_str() : "");
    std::fflush(stdout);
    const std::string k = "c" + std::to_string(c);
    figures[k + "_tokens_per_s"] = r.tokens_per_s;
    figures[k + "_reference_tokens_per_s"] = ref;
    figures[k + "_ttft_p50_ms"] = Percentile(r.ttft_ms, 0.5);
    figures[k + "_ttft_p99_ms"] = Percentile(r.ttft_ms, 0.99);
    figures[k + "_itl_p50_ms"] = Percentile(r.itl_ms, 0.5);
    figures[k + "_itl_p99_ms"] = Percentile(r.itl_ms, 0.99);
    if (c == 1) {
      figures["ttft_p50_ms"] = Percentile(r.ttft_ms, 0.5);
      figures["itl_p50_ms"] = Percentile(r.itl_ms, 0.5);
    }
  }
  if (o.bf16) {
    std::fprintf(stderr, "generation: concurrency 32, bf16 weights...\n");
    StreamOne(port, "bench/qwen3-bf16", kPrompt, 8, &warm, &mu);
    const Round r = RunRound(port, "bench/qwen3-bf16", kPrompt, 32, o.requests, o.new_tokens);
    std::printf("32 bf16 %7.1f tok/s (%.2fx the fp32 reference), TTFT p50 %.1f ms, ITL p50 %.1f ms\n",
                r.tokens_per_s, r.tokens_per_s / ref_tps[32], Percentile(r.ttft_ms, 0.5), Percentile(r.itl_ms, 0.5));
    figures["c32_bf16_tokens_per_s"] = r.tokens_per_s;
    figures["c32_bf16_vs_reference"] = r.tokens_per_s / ref_tps[32];
  }
  if (shoal_tps.count(32)) {
    figures["c32_vs_reference"] = shoal_tps[32] / ref_tps[32];
    if (shoal_tps.count(1)) figures["c32_over_c1"] = shoal_tps[32] / shoal_tps[1];
    std::printf("at 32: %.2fx the reference (target >= 3x); %.2fx concurrency 1 (target >= 8x)\n",
                figures["c32_vs_reference"], figures["c32_over_c1"]);
  }
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Generation: continuous batching against the reference's generate loop"};
  app.add_option("--out", o.out, "where the figures go");
  app.add_option("--models", o.models_dir, "the generated bench models (default: <source>/build-models)");
  app.add_option("--concurrency", o.concurrency, "client counts")->delimiter(',');
  app.add_option("--requests", o.requests, "requests per client per concurrency");
  app.add_option("--new-tokens", o.new_tokens, "tokens per request");
  app.add_flag("!--no-reference", o.reference, "skip the Python reference");
  app.add_flag("!--no-bf16", o.bf16, "skip the bf16-weights run at concurrency 32");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
