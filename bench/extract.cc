// What extraction and the encoder's other outputs cost over a plain encoder
// forward pass: the native runtime's Extract on a token classifier
// (MiniLM-L6 body, CoNLL's nine labels: minilm-l6-ner), its sparse Encode on
// the same body as SPLADE (minilm-l6-splade: the MLM head, a 30522-wide
// GEMM per token) and its multi-vector Encode as ColBERT (minilm-l6-colbert,
// documents) against Encode on the same-shaped embedder (minilm-l6), through
// the runtime interface each way (tokenizing, the forward pass, the head,
// and what follows it), in this run, one after the other.
//
// Inputs: seeded English-like texts, each cut to 128 tokens (truncate), 32
// per call. Each figure is the median call time over --seconds (at least 3
// calls, after a warm-up); the calls of the two tasks alternate round by
// round, so a change in the machine's speed shows in both. Shoal against
// itself: there is no peer runtime to run for this ratio (the target
// is extraction adding at most 10 % to the forward pass).
//
// Prints the table; writes docs/bench/extract.json (ner_over_encode,
// splade_over_encode, colbert_over_encode and the figures behind them).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "catalog/model_spec.h"
#include "figures.h"
#include "runtime/native/native_runtime.h"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string models_dir;
  int batch = 32;
  int seq = 128;
  int threads = 2;
  double seconds = 10;
  std::string out;
};

// Texts of words drawn from a small English list, long enough that every
// one is cut to the limit; capitalised words now and then (names, places).
std::vector<std::string> MakeTexts(int n) {
  static const char* kWords[] = {"the", "river", "runs", "past", "old", "mill", "and", "into", "town",
                                 "where", "people", "stop", "on", "bridge", "to", "watch", "boats",
                                 "London", "Paris", "Ada", "Lovelace", "Charles", "company", "report",
                                 "announced", "yesterday", "that", "its", "new", "office", "opens"};
  std::mt19937 rng(42);
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    std::string t;
    for (int w = 0; w < 200; ++w) t += std::string(w ? " " : "") + kWords[rng() % std::size(kWords)];
    texts.push_back(std::move(t));
  }
  return texts;
}

std::unique_ptr<Model> Load(const std::string& dir, const char* task, const Options& o) {
  auto spec = ModelSpec::Parse("id: bench/" + std::string(task) + "\nruntime: native\ntask: " + task +
                               "\nmax_input_tokens: " + std::to_string(o.seq) + "\npath: " + dir + "\n");
  if (!spec.ok()) return nullptr;
  NativeRuntime runtime;
  auto m = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{o.threads});
  if (!m.ok()) {
    std::fprintf(stderr, "extract: cannot load %s: %s\n", dir.c_str(), m.status().ToString().c_str());
    return nullptr;
  }
  return std::move(m).value();
}

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int Run(const Options& o) {
  const std::string models_dir = GenerateBenchModels(o.source_dir, o.models_dir, "extract",
                                                     "minilm-l6,minilm-l6-ner,minilm-l6-splade,minilm-l6-colbert");
  if (models_dir.empty()) return 1;
  auto encoder = Load(models_dir + "/minilm-l6", "encode", o);
  auto ner = Load(models_dir + "/minilm-l6-ner", "extract", o);
  auto splade = Load(models_dir + "/minilm-l6-splade", "encode", o);
  auto colbert = Load(models_dir + "/minilm-l6-colbert", "encode", o);
  if (!encoder || !ner || !splade || !colbert) return 1;
  const std::vector<std::string> texts = MakeTexts(o.batch);
  std::vector<EncodeInput> encode_in;
  for (const auto& t : texts) encode_in.push_back({.text = t, .truncate = true, .normalize = true, .lora = {}});
  // The other outputs of the same texts: SPLADE's sparse vector, ColBERT's
  // vectors of a document (its marker takes one of the 128 tokens).
  std::vector<EncodeInput> sparse_in = encode_in, colbert_in = encode_in;
  for (auto& x : sparse_in) x.outputs = static_cast<OutputKinds>(OutputKind::kSparse);
  for (auto& x : colbert_in) {
    x.outputs = static_cast<OutputKinds>(OutputKind::kMultivector);
    x.role = InputRole::kDocument;
  }
  const Aggregation strategies[] = {Aggregation::kNone, Aggregation::kSimple, Aggregation::kFirst};
  std::vector<std::vector<ExtractInput>> extract_in(std::size(strategies));
  for (size_t s = 0; s < std::size(strategies); ++s) {
    for (const auto& t : texts) {
      extract_in[s].push_back({.text = t, .truncate = true, .lora = {}, .aggregation = strategies[s], .top_k = 0});
    }
  }

  // One round: a call of each; their times go to their own lists.
  std::vector<double> encode_t, sparse_t, colbert_t;
  std::vector<std::vector<double>> extract_t(std::size(strategies));
  size_t entities = 0, sparse_nonzero = 0;
  auto round = [&](bool keep) {
    std::vector<EncodeOutput> eo(encode_in.size());
    auto t0 = Clock::now();
    (void)encoder->Encode(encode_in, eo);
    if (keep) encode_t.push_back(Seconds(t0));
    std::vector<EncodeOutput> so(sparse_in.size()), co(colbert_in.size());
    t0 = Clock::now();
    (void)splade->Encode(sparse_in, so);
    if (keep) sparse_t.push_back(Seconds(t0));
    t0 = Clock::now();
    (void)colbert->Encode(colbert_in, co);
    if (keep) colbert_t.push_back(Seconds(t0));
    sparse_nonzero = 0;
    for (const auto& x : so) sparse_nonzero += x.sparse.indices.size();
    if (!so[0].status.ok() || !co[0].status.ok()) {
      std::fprintf(stderr, "extract: sparse or multi-vector encode failed: %s %s\n", so[0].status.ToString().c_str(),
                   co[0].status.ToString().c_str());
    }
    for (size_t s = 0; s < std::size(strategies); ++s) {
      std::vector<ExtractOutput> xo(texts.size());
      t0 = Clock::now();
      (void)ner->Extract(extract_in[s], xo);
      if (keep) extract_t[s].push_back(Seconds(t0));
      if (s == 1) {
        entities = 0;
        for (const auto& x : xo) entities += x.entities.size();
      }
    }
    if (eo[0].tokens != static_cast<uint32_t>(o.seq)) {
      std::fprintf(stderr, "extract: a text came to %u tokens, not %d\n", eo[0].tokens, o.seq);
    }
  };
  std::fprintf(stderr, "extract: batch %d x %d tokens, %d thread(s), %.0f s\n", o.batch, o.seq, o.threads,
               o.seconds);
  round(false);
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  while (encode_t.size() < 3 || Clock::now() < end) {
    round(true);
    if (encode_t.size() % 5 == 0) std::fprintf(stderr, "  %zu rounds\n", encode_t.size());
  }

  nlohmann::json out;
  const double encode = Median(encode_t);
  const double tokens = static_cast<double>(o.batch) * o.seq;
  std::printf("\n%-26s %12s %12s %10s\n", "minilm-l6 shape, f32", "ms per call", "tokens/s", "vs encode");
  std::printf("%-26s %12.2f %12.0f %10s\n", "encode (mean pooling)", encode * 1e3, tokens / encode, "1.00x");
  out["encode_b32_ms"] = encode * 1e3;
  for (size_t s = 0; s < std::size(strategies); ++s) {
    const double t = Median(extract_t[s]);
    const std::string name(AggregationName(strategies[s]));
    std::printf("%-26s %12.2f %12.0f %9.3fx\n", ("extract NER, " + name).c_str(), t * 1e3, tokens / t, t / encode);
    out["ner_" + name + "_b32_ms"] = t * 1e3;
    out["ner_" + name + "_over_encode"] = t / encode;
  }
  out["ner_over_encode"] = out["ner_simple_over_encode"];
  for (const auto& [name, times] : {std::pair{"splade", &sparse_t}, std::pair{"colbert", &colbert_t}}) {
    const double t = Median(*times);
    const std::string label = std::string(name) == "splade" ? "encode sparse (SPLADE)" : "encode ColBERT document";
    std::printf("%-26s %12.2f %12.0f %9.3fx\n", label.c_str(), t * 1e3, tokens / t, t / encode);
    out[std::string(name) + "_b32_ms"] = t * 1e3;
    out[std::string(name) + "_over_encode"] = t / encode;
  }
  out["splade_nonzero_per_text"] = static_cast<double>(sparse_nonzero) / o.batch;
  out["rounds"] = encode_t.size();
  out["entities_per_call_simple"] = entities;
  out["batch"] = o.batch;
  out["seq"] = o.seq;
  out["threads"] = o.threads;
  std::printf("\n%s\n", out.dump(2).c_str());
  if (!o.out.empty()) {
    std::ofstream(o.out) << out.dump(2) << "\n";
    std::fprintf(stderr, "extract: wrote %s\n", o.out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"What extraction (NER) costs over a plain encoder forward pass"};
  app.add_option("--models-dir", o.models_dir, "where the bench models are generated (default: build-models)");
  app.add_option("--seconds", o.seconds, "measuring time")->capture_default_str();
  app.add_option("--threads", o.threads, "threads per call")->capture_default_str();
  app.add_option("--batch", o.batch, "texts per call")->capture_default_str();
  app.add_option("--out", o.out, "write the figures here (docs/bench/extract.json)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
