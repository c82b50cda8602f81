// The int8 benchmark (issue 27; docs/benchmarks.md "int8 variants"): the
// native runtime's int8 dense layers against its f32 and bf16 on the same
// weights, and against the strongest peers that run here, all in one run.
//
//   encoders  the MiniLM-L6 and BERT-base shapes (seeded weights,
//             scripts/make-test-models --bench), batch 32, sequence 128,
//             engine alone: Shoal f32 / bf16 / int8, and ONNX Runtime f32
//             on the same weights exported to ONNX (onnxruntime-node has no
//             quantization tool, and no int8 ONNX graph can be produced
//             here: ORT int8 is not measured). Accuracy: the cosine of each
//             sequence's pooled vector to f32's (mean, min).
//   decoder   qwen3-bench (Qwen3-shaped, ~44 M parameters, the real Qwen3
//             vocabulary) greedy, engine alone: Shoal's native generator
//             at f32 and int8 against llama.cpp driving Q8_0 of the same
//             weights (GGUF, scripts/make-test-gguf --bench), concurrency 1
//             and 32, --new-tokens per sequence, prefill included. At
//             concurrency 1 also the memory-bandwidth ceiling: the bytes of
//             weights one step streams (int8 dense layers and head) over
//             the machine's read bandwidth (a streaming read of 1 GiB on
//             the same threads; memcpy's copy rate beside it). Accuracy:
//             along one text (the prompt and f32's greedy continuation),
//             the share of positions whose top-1 next token equals f32's.
//
// Each figure is the median of --repeats rounds (each round's encoder
// figure itself the median of a --seconds window). The figures are merged
// into --out (docs/bench/self-service.json, beside bench-self-service's).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bare_llama.h"
#include "figures.h"
#include "run_peer.h"
#include "runtime/generator.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/decoder_config.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/models/cpu_encoder.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"

namespace shoal::bench {
namespace {

using native::cpu::Precision;

const char* kPrompt =
    "The river runs past the old mill and into the town, where people stop on the bridge to watch "
    "the fish "
    "in the water below.";

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string models_dir;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/self-service.json";
  int repeats = 3;
  double seconds = 3;
  int threads = 2;
  int new_tokens = 64;
};

const char* Name(Precision p) {
  return p == Precision::kF32 ? "f32" : p == Precision::kBF16 ? "bf16" : "int8";
}

struct CosineStats {
  double mean = 0, min = 1;
};
CosineStats Cosines(const std::vector<float>& a, const std::vector<float>& b, size_t width) {
  CosineStats c;
  const size_t n = a.size() / width;
  for (size_t s = 0; s < n; ++s) {
    double dot = 0, na = 0, nb = 0;
    for (size_t k = 0; k < width; ++k) {
      const double x = a[s * width + k], y = b[s * width + k];
      dot += x * y, na += x * x, nb += y * y;
    }
    const double cos = dot / std::sqrt(na * nb);
    c.mean += cos / static_cast<double>(n);
    c.min = std::min(c.min, cos);
  }
  return c;
}

// --- encoders ----------------------------------------------------------------

void Encoders(const Options& o, const std::string& models, std::map<std::string, double>& fig) {
  const int batch = 32, seq = 128;
  std::printf("\nencoders, batch %d x %d tokens, %d threads (tokens/s, median of %d rounds)\n",
              batch, seq, o.threads, o.repeats);
  std::printf("%-10s %10s %10s %10s %10s %8s %8s %10s %10s\n", "model", "f32", "bf16", "int8",
              "ort f32", "int8/f32", "int8/ort", "int8 cos", "min cos");
  for (const std::string name : {"minilm-l6", "bert-base"}) {
    const std::string key = name == "bert-base" ? "bertbase" : "minilm";
    const std::string dir = models + "/" + name;
    auto config = native::LoadEncoderConfig(dir);
    if (!config.ok()) {
      std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
      continue;
    }
    const std::string onnx = models + "/onnx/" + name + ".onnx";
    std::system(("mkdir -p " + models + "/onnx").c_str());
    const bool exported = std::system(("test -f " + onnx + ".check.json || /usr/bin/python3 " +
                                       o.source_dir + "/bench/encoders/export_onnx.py " + dir +
                                       " " + onnx + " > " + onnx + ".log 2>&1")
                                          .c_str()) == 0;
    std::mt19937 rng(42);
    std::vector<std::vector<int32_t>> ids(batch, std::vector<int32_t>(seq));
    for (auto& s : ids) {
      for (auto& id : s) id = static_cast<int32_t>(rng() % config->vocab_size);
    }
    std::vector<native::TokenSequence> seqs;
    for (const auto& s : ids) seqs.push_back({s, {}});
    std::map<Precision, std::vector<double>> tokens;
    std::map<Precision, std::vector<float>> outputs;
    std::vector<double> ort;
    std::map<Precision, std::unique_ptr<native::EncoderNetwork>> nets;
    for (Precision p : {Precision::kF32, Precision::kBF16, Precision::kInt8}) {
      auto net = native::LoadCpuEncoder(dir, *config, p);
      if (!net.ok()) {
        std::fprintf(stderr, "  cannot load %s %s: %s\n", name.c_str(), Name(p),
                     net.status().ToString().c_str());
        return;
      }
      nets[p] = std::move(net).value();
      outputs[p].resize(static_cast<size_t>(batch) * config->hidden_size);
    }
    for (int r = 0; r < o.repeats; ++r) {
      for (auto& [p, net] : nets) {
        std::vector<float>& out = outputs[p];
        const double t = TimeIt(
            [&] { (void)net->Embed(seqs, native::Pooling::kMean, false, out.data(), o.threads); },
            o.seconds);
        tokens[p].push_back(batch * seq / t);
        std::fprintf(stderr, "int8: %s %s round %d/%d: %.0f tokens/s\n", name.c_str(), Name(p),
                     r + 1, o.repeats, tokens[p].back());
      }
      if (exported) {
        const auto peer = RunPeer("node " + o.source_dir + "/bench/encoders/ort_peer.mjs " + onnx +
                                  " --batches 32 --seconds " + std::to_string(o.seconds));
        if (peer.is_object() && peer.contains("b32_tokens_per_s"))
          ort.push_back(peer["b32_tokens_per_s"]);
      }
    }
    const double f32 = Median(tokens[Precision::kF32]), bf16 = Median(tokens[Precision::kBF16]),
                 int8 = Median(tokens[Precision::kInt8]), ort_f32 = Median(ort);
    const CosineStats c8 =
        Cosines(outputs[Precision::kF32], outputs[Precision::kInt8], config->hidden_size);
    const CosineStats c16 =
        Cosines(outputs[Precision::kF32], outputs[Precision::kBF16], config->hidden_size);
    std::printf("%-10s %10.0f %10.0f %10.0f %10.0f %7.2fx %7.2fx %10.6f %10.6f\n", name.c_str(),
                f32, bf16, int8, ort_f32, int8 / f32, int8 / ort_f32, c8.mean, c8.min);
    std::fflush(stdout);
    fig["int8_" + key + "_b32_tokens_per_s"] = int8;
    fig["int8_" + key + "_f32_b32_tokens_per_s"] = f32;
    fig["int8_" + key + "_bf16_b32_tokens_per_s"] = bf16;
    fig["int8_" + key + "_ort_b32_tokens_per_s"] = ort_f32;
    fig["int8_" + key + "_b32_vs_f32"] = int8 / f32;
    fig["int8_" + key + "_b32_vs_bf16"] = int8 / bf16;
    fig["int8_" + key + "_b32_vs_ort"] = int8 / ort_f32;
    fig["int8_" + key + "_mean_cosine"] = c8.mean;
    fig["int8_" + key + "_min_cosine"] = c8.min;
    fig["bf16_" + key + "_mean_cosine"] = c16.mean;
  }
  fig["int8_mean_cosine"] =
      std::min(fig["int8_minilm_mean_cosine"], fig["int8_bertbase_mean_cosine"]);
}

// --- decoder -----------------------------------------------------------------

// Shoal's native generator alone: `concurrency` sequences of `prompt`,
// prefilled in one call, then one Forward per step, greedy.
class NativeDecoder {
 public:
  static std::unique_ptr<NativeDecoder> Load(const std::string& dir, Precision p, int concurrency,
                                             int threads) {
    const int per = 512 / 16;  // blocks of 16 positions per sequence
    auto spec = ModelSpec::Parse(
        std::string("id: bench/qwen3\nruntime: native\ntask: generate\npath: ") + dir +
        "\nnative: {precision: " + Name(p) + ", max_context: 512, kv_block_tokens: 16, " +
        "kv_cache_tokens: " + std::to_string(512 * concurrency) + "}\n");
    if (!spec.ok()) return nullptr;
    auto config = ModelConfig::FromSpec(*spec);
    if (!config.ok()) return nullptr;
    auto m = FindRuntime("native")->Load(*config, LoadContext{threads, {}});
    if (!m.ok()) {
      std::fprintf(stderr, "int8: %s\n", m.status().ToString().c_str());
      return nullptr;
    }
    auto d = std::unique_ptr<NativeDecoder>(new NativeDecoder);
    d->model_ = std::move(m).value();
    d->gen_ = d->model_->generator();
    d->concurrency_ = concurrency;
    d->threads_ = threads;
    for (int s = 0; s < concurrency; ++s) {
      std::vector<int32_t> b(per);
      for (int i = 0; i < per; ++i) b[static_cast<size_t>(i)] = s * per + i;
      d->blocks_.push_back(std::move(b));
    }
    return d;
  }

  // Tokens/s of one round over `new_tokens` per sequence, prefill included.
  double Round(const std::vector<int32_t>& prompt, int new_tokens) {
    const size_t vocab = gen_->info().vocab_size;
    std::vector<float> logits(static_cast<size_t>(concurrency_) * vocab);
    std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(concurrency_), prompt);
    const auto t0 = SteadyClock::now();
    std::vector<SequenceChunk> chunks;
    for (int s = 0; s < concurrency_; ++s)
      chunks.push_back({seqs[static_cast<size_t>(s)], 0, blocks_[static_cast<size_t>(s)], 1, {}, {}});
    if (!gen_->Forward(chunks, logits.data(), threads_).ok()) return NAN;
    generated_.clear();
    for (int step = 0; step < new_tokens; ++step) {
      chunks.clear();
      for (int s = 0; s < concurrency_; ++s) {
        const float* l = logits.data() + static_cast<size_t>(s) * vocab;
        auto& seq = seqs[static_cast<size_t>(s)];
        seq.push_back(static_cast<int32_t>(std::max_element(l, l + vocab) - l));
        if (s == 0) generated_.push_back(seq.back());
      }
      if (step + 1 == new_tokens) break;
      for (int s = 0; s < concurrency_; ++s) {
        const auto& seq = seqs[static_cast<size_t>(s)];
        chunks.push_back({std::span<const int32_t>(seq).last(1),
                          static_cast<uint32_t>(seq.size() - 1), blocks_[static_cast<size_t>(s)],
                          1, {}, {}});
      }
      if (!gen_->Forward(chunks, logits.data(), threads_).ok()) return NAN;
    }
    return concurrency_ * new_tokens /
           std::chrono::duration<double>(SteadyClock::now() - t0).count();
  }
  const std::vector<int32_t>& generated() const { return generated_; }

  // The greedy next token after each of `tokens`, in one prefill.
  std::vector<int32_t> TopOneAlong(const std::vector<int32_t>& tokens) {
    const size_t vocab = gen_->info().vocab_size;
    std::vector<float> logits(tokens.size() * vocab);
    SequenceChunk c{tokens, 0, blocks_[0], static_cast<uint32_t>(tokens.size()), {}, {}};
    std::vector<int32_t> out;
    if (!gen_->Forward({&c, 1}, logits.data(), threads_).ok()) return out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const float* l = logits.data() + i * vocab;
      out.push_back(static_cast<int32_t>(std::max_element(l, l + vocab) - l));
    }
    return out;
  }

 private:
  NativeDecoder() = default;
  std::unique_ptr<Model> model_;
  Generator* gen_ = nullptr;
  int concurrency_ = 1, threads_ = 1;
  std::vector<std::vector<int32_t>> blocks_;
  std::vector<int32_t> generated_;
};

// The share of positions where two top-1 lists agree.
double Agreement(const std::vector<int32_t>& got, const std::vector<int32_t>& reference) {
  if (got.size() != reference.size() || reference.empty()) return NAN;
  size_t same = 0;
  for (size_t i = 0; i < got.size(); ++i) same += got[i] == reference[i];
  return static_cast<double>(same) / static_cast<double>(reference.size());
}

// GB/s of reading (a sum over 64-bit words) and of memcpy, 1 GiB, on `threads` threads.
std::pair<double, double> Bandwidth(int threads, int repeats) {
  const size_t bytes = size_t{1} << 30, words = bytes / 8;
  std::vector<uint64_t> a(words, 1), b(words);
  std::vector<double> read, copy;
  for (int r = 0; r < repeats + 1; ++r) {  // the first round warms the pages
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    auto t0 = SteadyClock::now();
    {
      std::vector<std::thread> team;
      for (int t = 0; t < threads; ++t) {
        team.emplace_back([&, t] {
          const size_t lo = words * t / threads, hi = words * (t + 1) / threads;
          uint64_t s0 = 0, s1 = 0, s2 = 0,
                   s3 = 0;  // independent sums: the loads, not the adds, bound it
          size_t i = lo;
          for (; i + 4 <= hi; i += 4) s0 += a[i], s1 += a[i + 1], s2 += a[i + 2], s3 += a[i + 3];
          for (; i < hi; ++i) s0 += a[i];
          sums[static_cast<size_t>(t)] = s0 + s1 + s2 + s3;
        });
      }
      for (auto& th : team) th.join();
    }
    const double tr = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    t0 = SteadyClock::now();
    {
      std::vector<std::thread> team;
      for (int t = 0; t < threads; ++t) {
        team.emplace_back([&, t] {
          const size_t lo = words * t / threads, hi = words * (t + 1) / threads;
          std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * 8);
        });
      }
      for (auto& th : team) th.join();
    }
    const double tc = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    if (r == 0 || sums[0] == 0) continue;
    read.push_back(bytes / tr / 1e9);
    copy.push_back(bytes / tc / 1e9);
  }
  return {Median(read), Median(copy)};
}

void Decoder(const Options& o, const std::string& models, std::map<std::string, double>& fig) {
  const std::string dir = models + "/qwen3-bench";
  const std::string gguf = models + "/qwen3-bench-gguf-q8_0/qwen3-bench-Q8_0.gguf";
  auto config = native::LoadDecoderConfig(dir);
  if (!config.ok()) {
    std::fprintf(stderr, "int8: %s\n", config.status().ToString().c_str());
    return;
  }
  // Bytes of dense weights one int8 step streams: every layer's projections
  // and the head (the embedding lookup reads one row).
  const double H = config->hidden_size, I = config->intermediate_size,
               L = config->num_hidden_layers;
  const double q = static_cast<double>(config->num_attention_heads) * config->head_dim,
               kv = static_cast<double>(config->num_key_value_heads) * config->head_dim;
  const double step_bytes =
      L * (H * (q + 2 * kv) + q * H + 3 * H * I) + static_cast<double>(config->vocab_size) * H;
  const auto [read_gbs, copy_gbs] = Bandwidth(o.threads, o.repeats);
  const double ceiling = read_gbs * 1e9 / step_bytes;
  std::printf("\ndecoder qwen3-bench, %d new tokens, %d threads (tokens/s, median of %d rounds)\n",
              o.new_tokens, o.threads, o.repeats);
  std::printf(
      "memory: read %.1f GB/s, memcpy %.1f GB/s; an int8 step streams %.1f MB: ceiling %.0f "
      "tokens/s "
      "at concurrency 1\n",
      read_gbs, copy_gbs, step_bytes / 1e6, ceiling);
  fig["memory_read_gb_per_s"] = read_gbs;
  fig["memory_copy_gb_per_s"] = copy_gbs;
  fig["int8_decoder_step_mb"] = step_bytes / 1e6;
  std::printf("%-5s %10s %10s %12s %10s %12s %12s\n", "conc", "f32", "int8", "llama q8_0",
              "int8/q8_0", "int8 top-1", "q8_0 top-1");
  for (int c : {1, 32}) {
    BareLlama llama(gguf, kPrompt, c, o.new_tokens, o.threads);
    llama.Round();  // warm, and the prompt's tokens
    const std::vector<int32_t> prompt(llama.prompt().begin(), llama.prompt().end());
    auto f32 = NativeDecoder::Load(dir, Precision::kF32, c, o.threads);
    auto int8 = NativeDecoder::Load(dir, Precision::kInt8, c, o.threads);
    if (!f32 || !int8 || prompt.empty()) {
      std::fprintf(stderr, "int8: cannot run the decoders\n");
      return;
    }
    f32->Round(prompt, 4);  // warm
    int8->Round(prompt, 4);
    std::vector<double> tf, t8, tq;
    for (int r = 0; r < o.repeats; ++r) {
      tf.push_back(f32->Round(prompt, o.new_tokens));
      t8.push_back(int8->Round(prompt, o.new_tokens));
      tq.push_back(llama.Round());
      std::fprintf(
          stderr,
          "int8: decoder concurrency %d round %d/%d: f32 %.1f, int8 %.1f, llama q8_0 %.1f tok/s\n",
          c, r + 1, o.repeats, tf.back(), t8.back(), tq.back());
    }
    const double mf = Median(tf), m8 = Median(t8), mq = Median(tq);
    // Accuracy along one fixed text — the prompt and f32's greedy
    // continuation — so that one early difference does not decide the rest.
    std::vector<int32_t> text = prompt;
    text.insert(text.end(), f32->generated().begin(), f32->generated().end());
    const std::vector<int32_t> reference = f32->TopOneAlong(text);
    const std::vector<int32_t> along_q8 = [&] {
      auto t = llama.TopOneAlong(std::vector<llama_token>(text.begin(), text.end()));
      return std::vector<int32_t>(t.begin(), t.end());
    }();
    const double a8 = Agreement(int8->TopOneAlong(text), reference),
                 aq = Agreement(along_q8, reference);
    std::printf("%-5d %10.1f %10.1f %12.1f %9.2fx %12.3f %12.3f\n", c, mf, m8, mq, m8 / mq, a8, aq);
    std::fflush(stdout);
    const std::string k = "int8_decoder_c" + std::to_string(c);
    fig[k + "_tokens_per_s"] = m8;
    fig["f32_decoder_c" + std::to_string(c) + "_tokens_per_s"] = mf;
    fig["llamacpp_q8_decoder_c" + std::to_string(c) + "_tokens_per_s"] = mq;
    fig[k + "_vs_llamacpp_q8"] = m8 / mq;
    fig[k + "_vs_f32"] = m8 / mf;
    if (c == 1) {
      fig["int8_decoder_c1_of_bandwidth_ceiling"] = m8 / ceiling;
      fig["int8_decoder_top1_agreement"] = a8;
      fig["llamacpp_q8_top1_agreement"] = aq;
    }
  }
}

int Run(const Options& o) {
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr,
               "int8: generating the bench models and qwen3-bench's GGUF files in %s (once)\n",
               models.c_str());
  const std::string make = o.source_dir + "/scripts/make-test-models " + models +
                           " --only minilm-l6,bert-base,qwen3-bench >&2 && " + o.source_dir +
                           "/scripts/make-test-gguf " + models + " --bench >&2";
  if (std::system(make.c_str()) != 0) return 1;
  ggml_backend_load_all_from_path(SHOAL_LLAMACPP_LIB_DIR);
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);

  std::map<std::string, double> fig;
  Encoders(o, models, fig);
  Decoder(o, models, fig);
  // Merged into the self-service figures.
  nlohmann::json out = nlohmann::json::object();
  if (std::ifstream in(o.out); in) out = nlohmann::json::parse(in, nullptr, false);
  if (!out.is_object()) out = nlohmann::json::object();
  for (const auto& [k, v] : fig)
    out[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  std::ofstream(o.out) << out.dump(2) << "\n";
  std::printf(
      "int8_minilm_b32_vs_f32 %.2f (target >= 1.5), int8_bertbase_b32_vs_ort %.2f, "
      "int8_decoder_c1_vs_llamacpp_q8 %.2f (target >= 1.0), int8_decoder_c1_of_bandwidth_ceiling "
      "%.2f "
      "(target >= 0.8), int8_mean_cosine %.5f (target >= 0.995)\nmerged into %s\n",
      fig["int8_minilm_b32_vs_f32"], fig["int8_bertbase_b32_vs_ort"],
      fig["int8_decoder_c1_vs_llamacpp_q8"], fig["int8_decoder_c1_of_bandwidth_ceiling"],
      fig["int8_mean_cosine"], o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"int8 against f32, bf16, ONNX Runtime and llama.cpp Q8_0"};
  app.add_option("--models-dir", o.models_dir,
                 "where the bench models are generated (default: build-models)");
  app.add_option("--out", o.out, "merge the figures into this JSON file")->capture_default_str();
  app.add_option("--repeats", o.repeats, "rounds per figure (the median is kept)")
      ->capture_default_str();
  app.add_option("--seconds", o.seconds, "an encoder round's measuring window")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads, in every engine")->capture_default_str();
  app.add_option("--new-tokens", o.new_tokens, "tokens per sequence")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
