// The cost of serving many LoRA adapters at once (issue 9), in the native
// runtime on this machine's CPU: 100 rank-16 adapters on every dense layer
// (scripts/make-test-loras --bench) over a BERT-base-shaped encoder and the
// Qwen3-shaped generator (qwen3-bench), each request under a random adapter,
// against the base model alone at the same load, in the same run.
//
//  - Encoder: batches of --batch sequences of --tokens token ids, every
//    sequence under a random adapter (one packed batch: the base GEMMs shared,
//    each adapter's low-rank update per run of rows) against the same batch
//    on the base; the two alternate, --rounds each, median batch time.
//  - Generator: --sequences sequences prefilled, then --steps decode steps of
//    one token each, every sequence under a random adapter, against the base;
//    alternating, median step time.
//  - First use: an encode request naming an adapter registered but never
//    used (its files read and prepared on that request) against the next
//    request under the same adapter, through the Model interface the worker
//    calls; the median over --first-uses adapters of the difference.
//
// Adapters are loaded (and kept: the budget holds all 100) before the
// throughput rounds, which measure serving, not loading.
//
// usage: lora_bench [--models DIR] [--out docs/bench/lora.json] ...
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>

#include "catalog/model_spec.h"
#include "figures.h"
#include "runtime/generator.h"
#include "runtime/native/lora/lora_registry.h"
#include "runtime/native/models/bert.h"
#include "runtime/native/native_runtime.h"
#include "runtime/registry/registry.h"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;
using native::LoraAdapter;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string models_dir;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/lora.json";
  int adapters = 100;
  int batch = 16, tokens = 128, rounds = 5;
  int sequences = 32, steps = 24, generator_rounds = 3;
  int first_uses = 5;
  int threads = 2;
};

std::vector<LoraConfig> AdapterSpecs(const std::string& models, const std::string& base, int n) {
  std::vector<LoraConfig> specs;
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "b%03d", i);
    specs.push_back({name, models + "/loras/" + base + "/" + name});
  }
  return specs;
}

struct Arms {
  double base_ms = 0, lora_ms = 0;
};

Arms Encoder(const Options& o, const std::string& models, std::map<std::string, double>* figures) {
  const std::string dir = models + "/bert-base";
  auto config = native::LoadEncoderConfig(dir);
  auto bert = config.ok() ? native::Bert::Load(dir, *config, native::cpu::Precision::kBF16)
                          : Result<std::unique_ptr<native::Bert>>(config.status());
  if (!bert.ok()) {
    std::fprintf(stderr, "lora_bench: %s\n", bert.status().ToString().c_str());
    std::exit(1);
  }
  native::LoraRegistry registry(*(*bert)->lora_targets(), size_t{8} << 30);
  const auto specs = AdapterSpecs(models, "bert-base", o.adapters);
  registry.Update(specs);
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
  size_t bytes = 0;
  for (const LoraConfig& s : specs) {
    auto a = registry.Get(s.name);
    if (!a.ok()) {
      std::fprintf(stderr, "lora_bench: %s\n", a.status().ToString().c_str());
      std::exit(1);
    }
    bytes += (*a)->memory_bytes();
    adapters.push_back(std::move(a).value());
  }
  std::fprintf(stderr, "encoder: %d adapters loaded, %.0f MB\n", o.adapters, bytes / 1e6);

  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> ids(o.batch, std::vector<int32_t>(o.tokens));
  for (auto& s : ids) {
    for (auto& t : s) t = static_cast<int32_t>(1000 + rng() % (config->vocab_size - 1000));
  }
  std::vector<native::TokenSequence> base, mixed;
  for (const auto& s : ids) {
    base.push_back({s, {}, nullptr});
    mixed.push_back({s, {}, adapters[rng() % adapters.size()].get()});
  }
  std::vector<float> out(o.batch * config->hidden_size);
  std::vector<double> base_ms, lora_ms;
  for (int r = -1; r < o.rounds; ++r) {  // round -1 warms both
    for (auto* arm : {&base, &mixed}) {
      const auto t0 = Clock::now();
      if (!(*bert)->Embed(*arm, native::Pooling::kCls, false, out.data(), o.threads).ok()) std::exit(1);
      if (r >= 0) (arm == &base ? base_ms : lora_ms).push_back(Ms(Clock::now() - t0));
    }
    if (r >= 0) {
      std::fprintf(stderr, "encoder round %d: base %.0f ms, %d adapters %.0f ms\n", r, base_ms.back(), o.batch,
                   lora_ms.back());
    }
  }
  Arms a{Median(base_ms), Median(lora_ms)};
  const double tokens = static_cast<double>(o.batch) * o.tokens;
  (*figures)["encoder_base_tokens_per_s"] = tokens / (a.base_ms / 1000);
  (*figures)["encoder_lora_tokens_per_s"] = tokens / (a.lora_ms / 1000);
  (*figures)["encoder_lora_over_base"] = a.base_ms / a.lora_ms;
  (*figures)["encoder_adapter_mb"] = bytes / 1e6 / o.adapters;
  return a;
}

Arms Generator(const Options& o, const std::string& models, std::map<std::string, double>* figures) {
  const std::string dir = models + "/qwen3-bench";
  const int per_seq = 64;  // positions per sequence: prompt + steps
  auto spec = ModelSpec::Parse("id: b/qwen3\nruntime: native\ntask: generate\npath: " + dir +
                               "\nnative: {max_context: " + std::to_string(per_seq) +
                               ", kv_block_tokens: 16, kv_cache_tokens: " + std::to_string(per_seq * o.sequences) +
                               ", lora_budget_mb: 8192}\n");
  auto model = spec.ok() ? FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{o.threads})
                         : Result<std::unique_ptr<Model>>(spec.status());
  if (!model.ok()) {
    std::fprintf(stderr, "lora_bench: %s\n", model.status().ToString().c_str());
    std::exit(1);
  }
  const auto specs = AdapterSpecs(models, "qwen3-bench", o.adapters);
  if (!(*model)->UpdateLoras(specs).ok()) std::exit(1);
  ::shoal::Generator* gen = (*model)->generator();
  const size_t vocab = gen->info().vocab_size;
  std::mt19937 rng(11);
  const int prompt = 16;
  std::vector<std::vector<int32_t>> tokens(o.sequences), tables(o.sequences);
  std::vector<std::string> names(o.sequences);
  for (int s = 0; s < o.sequences; ++s) {
    for (int t = 0; t < prompt + o.steps; ++t) tokens[s].push_back(static_cast<int32_t>(1000 + rng() % 50000));
    for (int b = 0; b < per_seq / 16; ++b) tables[s].push_back(s * (per_seq / 16) + b);
    names[s] = specs[rng() % specs.size()].name;
  }
  std::vector<float> logits(o.sequences * vocab);
  // Loads every adapter once (a step naming each).
  for (size_t i = 0; i < specs.size(); ++i) {
    SequenceChunk c{std::span<const int32_t>(tokens[0]).first(1), 0, tables[0], true};
    c.lora = specs[i].name;
    if (!gen->Forward({&c, 1}, logits.data(), o.threads).ok()) std::exit(1);
  }
  // One arm: prefill every sequence, then time the decode steps.
  auto run = [&](bool lora) {
    std::vector<SequenceChunk> chunks(o.sequences);
    for (int s = 0; s < o.sequences; ++s) {
      chunks[s] = {std::span<const int32_t>(tokens[s]).first(prompt), 0, tables[s], true};
      if (lora) chunks[s].lora = names[s];
    }
    if (!gen->Forward(chunks, logits.data(), o.threads).ok()) std::exit(1);
    std::vector<double> ms;
    for (int step = 0; step < o.steps; ++step) {
      for (int s = 0; s < o.sequences; ++s) {
        chunks[s].tokens = std::span<const int32_t>(tokens[s]).subspan(prompt + step, 1);
        chunks[s].start = static_cast<uint32_t>(prompt + step);
      }
      const auto t0 = Clock::now();
      if (!gen->Forward(chunks, logits.data(), o.threads).ok()) std::exit(1);
      ms.push_back(Ms(Clock::now() - t0));
    }
    return Median(ms);
  };
  std::vector<double> base_ms, lora_ms;
  for (int r = -1; r < o.generator_rounds; ++r) {
    const double b = run(false), l = run(true);
    if (r < 0) continue;
    base_ms.push_back(b);
    lora_ms.push_back(l);
    std::fprintf(stderr, "generator round %d: decode step of %d sequences: base %.1f ms, under adapters %.1f ms\n",
                 r, o.sequences, b, l);
  }
  Arms a{Median(base_ms), Median(lora_ms)};
  (*figures)["generator_base_tokens_per_s"] = o.sequences / (a.base_ms / 1000);
  (*figures)["generator_lora_tokens_per_s"] = o.sequences / (a.lora_ms / 1000);
  (*figures)["generator_lora_over_base"] = a.base_ms / a.lora_ms;
  return a;
}

double FirstUse(const Options& o, const std::string& models, std::map<std::string, double>* figures) {
  auto spec = ModelSpec::Parse("id: b/bert\nruntime: native\npath: " + models +
                               "/bert-base\nnative: {precision: bf16}\n");
  auto model = spec.ok() ? FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{o.threads})
                         : Result<std::unique_ptr<Model>>(spec.status());
  if (!model.ok()) std::exit(1);
  const auto specs = AdapterSpecs(models, "bert-base", o.first_uses);
  if (!(*model)->UpdateLoras(specs).ok()) std::exit(1);
  const std::string text = "The river runs past the old mill and into the town, where people stop on the bridge.";
  std::vector<EncodeOutput> out(1);
  std::vector<double> added;
  for (const LoraConfig& s : specs) {
    std::vector<EncodeInput> in = {{.text = text, .lora = s.name}};
    auto t0 = Clock::now();
    if (!(*model)->Encode(in, out).ok() || !out[0].status.ok()) std::exit(1);
    const double cold = Ms(Clock::now() - t0);
    t0 = Clock::now();
    if (!(*model)->Encode(in, out).ok()) std::exit(1);
    const double warm = Ms(Clock::now() - t0);
    added.push_back(cold - warm);
    std::fprintf(stderr, "first use of %s: %.1f ms, then %.1f ms\n", s.name.c_str(), cold, warm);
  }
  (*figures)["first_use_added_ms"] = Median(added);
  return Median(added);
}

int Run(int argc, char** argv) {
  Options o;
  CLI::App app{"Serving 100 LoRA adapters at once against the base model alone (native runtime, CPU)"};
  app.add_option("--models", o.models_dir, "generated models (default <source>/build-models)");
  app.add_option("--out", o.out, "the figures file");
  app.add_option("--adapters", o.adapters, "adapters (at most 100)");
  app.add_option("--batch", o.batch, "encoder: sequences per batch");
  app.add_option("--tokens", o.tokens, "encoder: tokens per sequence");
  app.add_option("--rounds", o.rounds, "encoder: measured batches per arm");
  app.add_option("--sequences", o.sequences, "generator: sequences decoding together");
  app.add_option("--steps", o.steps, "generator: decode steps per round");
  app.add_option("--threads", o.threads, "cores per batch");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr, "lora_bench: generating the bench models and adapters in %s (once)\n", models.c_str());
  const std::string make = o.source_dir + "/scripts/make-test-models " + models + " --only bert-base,qwen3-bench >&2 && " +
                           o.source_dir + "/scripts/make-test-loras " + models + " --bench >&2";
  if (std::system(make.c_str()) != 0) return 1;

  std::map<std::string, double> figures;
  const Arms e = Encoder(o, models, &figures);
  const Arms g = Generator(o, models, &figures);
  const double first = FirstUse(o, models, &figures);
  figures["adapters"] = o.adapters;
  figures["rank"] = 16;
  std::printf("\n%-44s %12s %12s %8s\n", "", "base", "100 adapters", "ratio");
  std::printf("%-44s %12.0f %12.0f %7.2fx\n", "encoder (BERT-base, bf16) tokens/s", figures["encoder_base_tokens_per_s"],
              figures["encoder_lora_tokens_per_s"], e.base_ms / e.lora_ms);
  std::printf("%-44s %12.0f %12.0f %7.2fx\n", "generator (Qwen3-shaped) decode tokens/s",
              figures["generator_base_tokens_per_s"], figures["generator_lora_tokens_per_s"], g.base_ms / g.lora_ms);
  std::printf("first use of a newly registered adapter adds %.1f ms (median of %d)\n", first, o.first_uses);
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) { return shoal::bench::Run(argc, argv); }
