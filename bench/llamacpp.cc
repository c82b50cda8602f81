// The llama.cpp benchmark (issue 22; docs/benchmarks.md "llama.cpp"): the
// same GGUF generated through Shoal — gateway, JetStream, a worker's stream
// relay, the shoal-llamacpp sidecar's continuous batching — against
// llama.cpp alone: this program driving the same prebuilt libllama
// directly, with no server at all (one warmed context, the prompts
// prefilled together, then every sequence's next token in one llama_decode
// per step, greedy), the ceiling any server on it can reach. Same weights (qwen3-bench as F16 and Q8_0: scripts/make-test-models
// --bench, scripts/make-test-gguf --bench), same threads (a ggml thread
// pool each, --poll their polling level), same prompt,
// greedy, ignore_eos, --new-tokens tokens per sequence, at concurrency 1, 8
// and 32. Each figure is the median of --repeats rounds.
//
// Then what holding the output to a JSON schema costs (response_format:
// llama.cpp's grammar sampler behind Shoal's UTF-8 guard), Q8_0 through
// Shoal, chat completions both: free text against a schema, at concurrency
// 1 and 32 (keys json_schema_c1_over_free, json_schema_c32_over_free).
//
// In-process: nats-server is a child; gateway, worker and clients share this
// process (and the machine's cores), the sidecar is the worker's child.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "admin/model_directory.h"
#include "bare_llama.h"
#include "bench_cluster.h"
#include "bench_options.h"
#include "common/clock.h"
#include "figures.h"
#include "generation_load.h"

namespace shoal::bench {
namespace {

const char* kPrompt =
    "The river runs past the old mill and into the town, where people stop on the bridge to watch the fish "
    "in the water below.";

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/llamacpp.json";
  std::string models_dir;
  std::vector<int> concurrency = {1, 8, 32};
  int repeats = 3;
  int new_tokens = 64;
  int threads = 2;
  uint32_t poll = 0;
};

int Run(const Options& o) {
  // The sidecar is found beside the shoal binary (not this one).
  setenv("SHOAL_RUNTIME_HOST", SHOAL_BINARY, 0);
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr, "llamacpp: generating qwen3-bench and its GGUF files in %s (once)\n", models.c_str());
  const std::string make = o.source_dir + "/scripts/make-test-models " + models + " --only qwen3-bench >&2 && " +
                           o.source_dir + "/scripts/make-test-gguf " + models + " --bench >&2";
  if (std::system(make.c_str()) != 0) return 1;
  ggml_backend_load_all_from_path(SHOAL_LLAMACPP_LIB_DIR);
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);

  const std::vector<std::string> types = {"f16", "q8_0"};
  std::vector<ModelSpec> specs;
  for (const std::string& t : types) {
    auto spec = admin::SpecFromDirectory(models + "/qwen3-bench-gguf-" + t, "bench/qwen3-" + t);
    if (!spec.ok()) return std::fprintf(stderr, "%s\n", spec.status().ToString().c_str()), 1;
    spec->pinned = true;
    spec->batching.max_batch_requests = 32;
    spec->batching.max_batch_tokens = 512;
    spec->queue.ack_wait_ms = 60000;
    spec->runtime_options_json =
        "{\"threads\": " + std::to_string(o.threads) + ", \"poll\": " + std::to_string(o.poll) + "}";
    specs.push_back(*spec);
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("shoal-llamacpp-bench-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("llamacpp", dir, specs, {});
  if (!cluster) return 1;
  const int port = cluster->port();

  std::printf("llama.cpp through Shoal against llama.cpp alone: qwen3-bench, %d threads, %d new tokens, "
              "median of %d\n", o.threads, o.new_tokens, o.repeats);
  std::printf("%-5s %-5s %14s %14s %7s\n", "type", "conc", "shoal tok/s", "bare tok/s", "ratio");
  std::map<std::string, double> figures;
  for (const std::string& t : types) {
    const std::string id = "bench/qwen3-" + t;
    const std::string gguf = models + "/qwen3-bench-gguf-" + t + "/qwen3-bench-" + (t == "f16" ? "F16" : "Q8_0") + ".gguf";
    for (int c : o.concurrency) {
      std::vector<double> shoal, bare;
      BareLlama alone(gguf, kPrompt, c, o.new_tokens, o.threads, o.poll);
      alone.Round();  // warm: a context's first decodes allocate its graphs
      RunRound(port, id, kPrompt, c, 1, 8);  // and Shoal's, at this batch size
      for (int i = 0; i < o.repeats; ++i) {
        shoal.push_back(RunRound(port, id, kPrompt, c, 1, o.new_tokens).tokens_per_s);
        bare.push_back(alone.Round());
        std::fprintf(stderr, "llamacpp: %s concurrency %d, round %d/%d: shoal %.1f, bare %.1f tok/s\n", t.c_str(), c,
                     i + 1, o.repeats, shoal.back(), bare.back());
      }
      const double s = Median(shoal), b = Median(bare);
      std::printf("%-5s %-5d %14.1f %14.1f %6.2fx\n", t.c_str(), c, s, b, s / b);
      std::fflush(stdout);
      const std::string k = t + "_c" + std::to_string(c);
      figures[k + "_shoal_tokens_per_s"] = s;
      figures[k + "_bare_tokens_per_s"] = b;
      figures[k + "_over_bare"] = s / b;
    }
  }
  // JSON output: the same requests as chat, free or held to a schema.
  const std::string free_text = R"({"type": "text"})";
  const std::string schema = R"({"type": "json_schema", "json_schema": {"name": "note", "schema": {
      "type": "object", "properties": {"title": {"type": "string"}, "tags": {"type": "array",
      "items": {"type": "string"}}}, "required": ["title", "tags"]}}})";
  std::printf("%-5s %-5s %14s %14s %7s\n", "json", "conc", "schema tok/s", "free tok/s", "ratio");
  for (int c : {1, 32}) {
    RunRound(port, "bench/qwen3-q8_0", kPrompt, c, 1, 8, free_text);  // warm both
    RunRound(port, "bench/qwen3-q8_0", kPrompt, c, 1, 8, schema);
    std::vector<double> free, held;
    for (int i = 0; i < o.repeats; ++i) {
      std::fprintf(stderr, "llamacpp: json schema, concurrency %d, round %d/%d\n", c, i + 1, o.repeats);
      free.push_back(RunRound(port, "bench/qwen3-q8_0", kPrompt, c, 1, o.new_tokens, free_text).tokens_per_s);
      held.push_back(RunRound(port, "bench/qwen3-q8_0", kPrompt, c, 1, o.new_tokens, schema).tokens_per_s);
    }
    const double f = Median(free), h = Median(held);
    std::printf("%-5s %-5d %14.1f %14.1f %6.2fx\n", "q8_0", c, h, f, h / f);
    std::fflush(stdout);
    const std::string k = "json_schema_c" + std::to_string(c);
    figures[k + "_tokens_per_s"] = h;
    figures["json_free_c" + std::to_string(c) + "_tokens_per_s"] = f;
    figures[k + "_over_free"] = h / f;
  }

  // The headline keys: the lower of the two weight types at each level.
  figures["llamacpp_c1_over_bare"] = std::min(figures["f16_c1_over_bare"], figures["q8_0_c1_over_bare"]);
  figures["llamacpp_c32_over_bare"] = std::min(figures["f16_c32_over_bare"], figures["q8_0_c32_over_bare"]);
  std::printf("llamacpp_c1_over_bare %.2f, llamacpp_c32_over_bare %.2f (target >= 0.95)\n",
              figures["llamacpp_c1_over_bare"], figures["llamacpp_c32_over_bare"]);
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"llama.cpp through Shoal against llama.cpp alone"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--concurrency", o.concurrency, "client counts")->delimiter(',');
  app.add_option("--new-tokens", o.new_tokens, "tokens per request");
  app.add_option("--threads", o.threads, "llama.cpp threads, in both");
  app.add_option("--poll", o.poll, "their polling level between steps (0-100), in both");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
