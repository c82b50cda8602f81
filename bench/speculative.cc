// Speculative decoding (issue 24): tokens/s of greedy generation with and
// without drafts, through the whole serving path (gateway → JetStream →
// worker), on qwen3-spec-bench — a 12-layer, 38 M-parameter f32 target whose
// layers cost what its head does not (scripts/make-test-models) — with
//   - a draft that agrees: the target's own first two layers (layer skip),
//   - a draft that does not: two layers of other weights,
//   - prompt lookup (ngram), no draft model,
// at concurrency 1 and 8, each against the same target without drafts in
// the same run. The acceptance rate is the share of drafted tokens the
// target kept (the worker's engine counters over the measured rounds).
//
// Workload: C clients each stream one greedy completion of --new-tokens
// tokens (ignore_eos) of a short prompt; tokens/s is every generated token
// over the round's wall time; median of --repeats rounds, after a warm-up.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>

#include "bench_cluster.h"
#include "bench_options.h"
#include "figures.h"
#include "generation_load.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/speculative.json";
  std::string models_dir;
  std::vector<int> concurrency = {1, 8};
  int repeats = 3;
  int new_tokens = 96;
  int threads = 2;
  int k = 4;
};

const char* kPrompt = "The river runs past the old mill and into the town, where people stop on the bridge";

ModelSpec Generator(const std::string& id, const std::string& path) {
  ModelSpec s;
  s.id = id;
  s.runtime = "native";
  s.task = Task::kGenerate;
  s.path = path;
  s.runtime_options_json = R"({"max_context": 1024, "precision": "f32"})";
  s.pinned = true;
  s.batching.max_batch_requests = 8;
  s.batching.max_batch_tokens = 512;
  s.queue.ack_wait_ms = 60000;
  return s;
}

struct Variant {
  const char* id;     // the model id served
  const char* label;  // in the table and the figures' keys
  const char* draft;  // speculative.draft; null: none
};

const Variant kVariants[] = {{"bench/plain", "plain", nullptr},
                             {"bench/spec-agreeing", "agreeing_draft", "bench/draft-agreeing"},
                             {"bench/spec-disagreeing", "disagreeing_draft", "bench/draft-disagreeing"},
                             {"bench/spec-ngram", "ngram", "ngram"}};

int Run(const Options& o) {
  const std::string models = GenerateBenchModels(o.source_dir, o.models_dir, "speculative",
                                                 "qwen3-spec-bench,qwen3-spec-bench-draft,qwen3-spec-bench-other");
  if (models.empty()) return 1;
  std::vector<ModelSpec> specs = {Generator("bench/draft-agreeing", models + "/qwen3-spec-bench-draft"),
                                  Generator("bench/draft-disagreeing", models + "/qwen3-spec-bench-other")};
  for (const Variant& v : kVariants) {
    ModelSpec s = Generator(v.id, models + "/qwen3-spec-bench");
    if (v.draft) s.speculative = {.draft = v.draft, .k = static_cast<uint32_t>(o.k)};
    specs.push_back(s);
  }
  worker::WorkerOptions wo;
  wo.threads_per_executor = o.threads;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("shoal-speculative-bench-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("speculative", dir, specs, wo);
  if (!cluster) return 1;
  const int port = cluster->port();

  std::printf("Speculative decoding, qwen3-spec-bench f32 through Shoal, greedy, k up to %d, %d threads, "
              "%d new tokens, median of %d\n",
              o.k, o.threads, o.new_tokens, o.repeats);
  std::printf("%-5s %-18s %10s %9s %11s\n", "conc", "drafts", "tok/s", "speedup", "acceptance");
  std::map<std::string, double> figures;
  for (int c : o.concurrency) {
    std::map<std::string, std::vector<double>> rounds;
    std::map<std::string, std::pair<uint64_t, uint64_t>> counted;  // drafted, accepted
    for (const Variant& v : kVariants) RunRound(port, v.id, kPrompt, c, 1, 16);  // warm
    for (int i = 0; i < o.repeats; ++i) {
      std::fprintf(stderr, "speculative: concurrency %d, round %d/%d\n", c, i + 1, o.repeats);
      for (const Variant& v : kVariants) {
        const auto before = cluster->worker().generation(v.id);
        const Round r = RunRound(port, v.id, kPrompt, c, 1, o.new_tokens);
        const auto after = cluster->worker().generation(v.id);
        if (r.errors) std::fprintf(stderr, "speculative: %s: %d errors\n", v.id, r.errors);
        rounds[v.label].push_back(r.tokens_per_s);
        if (before && after) {
          counted[v.label].first += after->drafted_tokens - before->drafted_tokens;
          counted[v.label].second += after->accepted_tokens - before->accepted_tokens;
        }
      }
    }
    const std::string cs = "_c" + std::to_string(c);
    const double plain = Median(rounds["plain"]);
    for (const Variant& v : kVariants) {
      const double tps = Median(rounds[v.label]);
      const auto [drafted, accepted] = counted[v.label];
      const double acceptance = drafted ? static_cast<double>(accepted) / drafted : 0;
      std::printf("%-5d %-18s %10.1f %8.2fx %11s\n", c, v.label, tps, tps / plain,
                  v.draft ? (std::to_string(static_cast<int>(100 * acceptance + 0.5)) + " %").c_str() : "-");
      std::fflush(stdout);
      figures[std::string(v.label) + cs + "_tokens_per_s"] = tps;
      if (!v.draft) continue;
      figures[std::string(v.label) + cs + "_speedup"] = tps / plain;
      figures[std::string(v.label) + cs + "_acceptance"] = acceptance;
    }
  }
  figures["spec_greedy_speedup_c1"] = figures["agreeing_draft_c1_speedup"];
  std::printf("spec_greedy_speedup_c1 %.2f (a draft that agrees, greedy, concurrency 1)\n",
              figures["spec_greedy_speedup_c1"]);
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Speculative decoding: tokens/s with and without drafts"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--concurrency", o.concurrency, "client counts")->delimiter(',');
  app.add_option("--new-tokens", o.new_tokens, "tokens per request");
  app.add_option("--threads", o.threads, "threads of the worker's engine");
  app.add_option("--k", o.k, "the most tokens drafted per step (speculative.k)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
