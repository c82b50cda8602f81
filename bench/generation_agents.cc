// Generation for agents (issue 24): the native runtime against llama.cpp on
// the same weights at the same precision — qwen3-bench (the Qwen3-shaped
// bench model with the real Qwen3 tokenizer) as float32 safetensors for the
// native runtime and as an F32 GGUF for the llamacpp runtime — both through
// the whole serving path (gateway → JetStream → worker), free text and held
// to a JSON schema (the native runtime's token masks; llama.cpp's grammar
// sampler), at concurrency 1, 8 and 32.
//
// Workload: C clients each stream one greedy chat completion of
// --new-tokens tokens (ignore_eos) of the same short prompt, free
// (response_format text) or held to the schema; tokens/s is every generated
// token over the round's wall time. Each figure is the median of --repeats
// rounds, after a warm-up round at each concurrency. Both runtimes use the
// same threads; gateway, worker, nats-server and the clients share the
// machine's cores.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "admin/model_directory.h"
#include "bench_cluster.h"
#include "bench_options.h"
#include "figures.h"
#include "generation_load.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/generation-agents.json";
  std::string models_dir;
  std::vector<int> concurrency = {1, 8, 32};
  int repeats = 3;
  int new_tokens = 64;
  int threads = 2;
};

// 27 tokens as one user message of Qwen3's template (without it: 14).
const char* kPrompt = "Describe the old mill by the river as a short note with a title and tags.";

const char* kFree = R"({"type": "text"})";
const char* kSchema = R"({"type": "json_schema", "json_schema": {"name": "note", "strict": true, "schema": {
    "type": "object", "properties": {"title": {"type": "string"}, "tags": {"type": "array",
    "items": {"type": "string"}}}, "required": ["title", "tags"], "additionalProperties": false}}})";

int Run(const Options& o) {
  setenv("SHOAL_RUNTIME_HOST", SHOAL_BINARY, 0);  // the llamacpp sidecar is found beside shoal
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr, "generation-agents: generating qwen3-bench and its GGUF files in %s (once)\n", models.c_str());
  const std::string make = o.source_dir + "/scripts/make-test-models " + models + " --bench --only qwen3-bench >&2 && " +
                           o.source_dir + "/scripts/make-test-gguf " + models + " --bench >&2";
  if (std::system(make.c_str()) != 0) return 1;

  const std::string threads = std::to_string(o.threads);
  std::vector<ModelSpec> specs;
  {
    ModelSpec native;
    native.id = "bench/native";
    native.runtime = "native";
    native.task = Task::kGenerate;
    native.path = models + "/qwen3-bench";
    native.runtime_options_json = R"({"max_context": 1024, "precision": "f32"})";
    specs.push_back(native);
    auto gguf = admin::SpecFromDirectory(models + "/qwen3-bench-gguf-f32", "bench/llamacpp");
    if (!gguf.ok()) return std::fprintf(stderr, "%s\n", gguf.status().ToString().c_str()), 1;
    gguf->runtime_options_json = "{\"threads\": " + threads + "}";
    specs.push_back(*gguf);
  }
  for (ModelSpec& spec : specs) {
    spec.pinned = true;
    spec.batching.max_batch_requests = 32;
    spec.batching.max_batch_tokens = 512;
    spec.queue.ack_wait_ms = 60000;
  }
  worker::WorkerOptions wo;
  wo.threads_per_executor = o.threads;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("shoal-generation-agents-bench-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("generation-agents", dir, specs, wo);
  if (!cluster) return 1;
  const int port = cluster->port();

  std::printf("Native against llama.cpp, qwen3-bench f32 through Shoal, %d threads, %d new tokens, median of %d\n",
              o.threads, o.new_tokens, o.repeats);
  std::printf("%-5s %-7s %14s %14s %8s\n", "conc", "output", "native tok/s", "llama.cpp", "ratio");
  std::map<std::string, double> figures;
  for (int c : o.concurrency) {
    for (const char* format : {kFree, kSchema}) {
      const bool held = format == kSchema;
      std::map<std::string, std::vector<double>> rounds;
      for (const char* model : {"bench/native", "bench/llamacpp"}) {
        RunRound(port, model, kPrompt, c, 1, 8, format);  // warm: this batch size, this schema
      }
      for (int i = 0; i < o.repeats; ++i) {
        std::fprintf(stderr, "generation-agents: concurrency %d, %s, round %d/%d\n", c, held ? "schema" : "free",
                     i + 1, o.repeats);
        for (const char* model : {"bench/native", "bench/llamacpp"}) {
          const Round r = RunRound(port, model, kPrompt, c, 1, o.new_tokens, format);
          if (r.errors) std::fprintf(stderr, "generation-agents: %s: %d errors\n", model, r.errors);
          rounds[model].push_back(r.tokens_per_s);
        }
      }
      const double n = Median(rounds["bench/native"]), l = Median(rounds["bench/llamacpp"]);
      std::printf("%-5d %-7s %14.1f %14.1f %7.2fx\n", c, held ? "schema" : "free", n, l, n / l);
      std::fflush(stdout);
      const std::string k = std::string(held ? "json_schema" : "free") + "_c" + std::to_string(c);
      figures[k + "_native_tokens_per_s"] = n;
      figures[k + "_llamacpp_tokens_per_s"] = l;
      figures[k + "_native_over_llamacpp"] = n / l;
    }
    const std::string cs = std::to_string(c);
    figures["c" + cs + "_vs_llamacpp"] = figures["free_c" + cs + "_native_over_llamacpp"];
    figures["json_schema_c" + cs + "_over_free"] =
        figures["json_schema_c" + cs + "_native_tokens_per_s"] / figures["free_c" + cs + "_native_tokens_per_s"];
    figures["llamacpp_json_schema_c" + cs + "_over_free"] =
        figures["json_schema_c" + cs + "_llamacpp_tokens_per_s"] / figures["free_c" + cs + "_llamacpp_tokens_per_s"];
  }
  for (int c : o.concurrency) {
    const std::string cs = std::to_string(c);
    std::printf("c%d_vs_llamacpp %.2f, json_schema_c%d_over_free %.2f (llama.cpp's own: %.2f)\n", c,
                figures["c" + cs + "_vs_llamacpp"], c, figures["json_schema_c" + cs + "_over_free"],
                figures["llamacpp_json_schema_c" + cs + "_over_free"]);
  }
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"The native runtime against llama.cpp, free and held to a JSON schema"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--concurrency", o.concurrency, "client counts")->delimiter(',');
  app.add_option("--new-tokens", o.new_tokens, "tokens per request");
  app.add_option("--threads", o.threads, "threads of each runtime");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
