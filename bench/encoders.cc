// The encoder benchmark: Shoal's native encoders (BERT family, ModernBERT) against PyTorch
// (Debian's python3-torch, eager, inference_mode, its best thread setting)
// and ONNX Runtime (onnxruntime-node on the same weights exported to ONNX),
// all in this run, on this machine, one after the other.
//
// Models: the all-MiniLM-L6-v2, BERT-base, ModernBERT-base and XLM-R-base
// shapes with seeded random weights (scripts/make-test-models --bench). Inputs: seeded random
// token ids, sequence length 128, batch 1, 8 and 32. For each: warm-up, then
// repeats for --seconds (at least 3), median batch time → tokens/s; batch-1
// latency is the median batch-1 time. Shoal runs f32 (what the peers run)
// and bf16 (AVX-512 BF16 GEMMs; the tests state its error bound).
//
// Also measured in the run: the machine's GEMM ceiling (1024³ f32 and bf16
// through the same GEMM backend on the same threads), and the fraction of it
// the model reaches at batch 32 (model FLOPs / time / ceiling).
//
// Prints a table with the ratios; writes docs/bench/encoders.json.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "figures.h"
#include "run_peer.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/models/cpu_encoder.h"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;
using native::cpu::Precision;

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string models_dir;
  std::vector<std::string> models = {"minilm-l6", "bert-base", "modernbert-base", "xlmr-base"};
  std::vector<int> batches = {1, 8, 32};
  int seq = 128;
  int threads = 2;
  double seconds = 5;
  bool peers = true;
  std::string out;
};

// FLOPs of one forward pass over `batch` sequences of `seq` tokens (full
// attention everywhere: what the kernels compute, a local window included).
double ModelFlops(const native::EncoderConfig& c, int batch, int seq) {
  const double T = static_cast<double>(batch) * seq, H = c.hidden_size, I = c.intermediate_size;
  // ModernBERT's GeGLU input projection is twice as wide.
  const double feed_forward = c.is_modernbert() ? 3 * H * I : 2 * H * I;
  const double dense = 2 * T * (3 * H * H + H * H + feed_forward);
  const double attention = 2 * 2 * static_cast<double>(batch) * seq * seq * H;  // q·kᵀ and p·v
  return c.num_hidden_layers * (dense + attention);
}

// GFLOP/s of a 1024³ GEMM through cpu::Linear on `threads` threads.
double GemmCeiling(Precision p, int threads, double seconds) {
  const size_t n = 1024;
  std::vector<float> w(n * n), x(n * n), y(n * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : w) v = u(rng);
  for (auto& v : x) v = u(rng);
  auto linear = native::cpu::Linear::Create(w.data(), native::cpu::WeightLayout::kOutIn, n, n, nullptr, p);
  if (!linear.ok()) return 0;
  const double t = TimeIt([&] { (*linear)->Forward(x.data(), n, y.data(), native::cpu::Activation::kNone, threads); },
                          seconds / 2);
  return 2.0 * n * n * n / t / 1e9;
}

struct ShoalFigures {
  std::map<int, double> tokens_per_s;
  double b1_latency_ms = 0;
  double b32_gflops = 0;
};

ShoalFigures MeasureShoal(const std::string& dir, const native::EncoderConfig& config, Precision precision,
                          const Options& o) {
  ShoalFigures f;
  auto bert = native::LoadCpuEncoder(dir, config, precision);
  if (!bert.ok()) {
    std::fprintf(stderr, "  cannot load %s: %s\n", dir.c_str(), bert.status().ToString().c_str());
    return f;
  }
  std::mt19937 rng(42);
  for (int batch : o.batches) {
    std::vector<std::vector<int32_t>> ids(batch, std::vector<int32_t>(o.seq));
    for (auto& s : ids) {
      for (auto& id : s) id = static_cast<int32_t>(rng() % config.vocab_size);
    }
    std::vector<native::TokenSequence> seqs;
    for (const auto& s : ids) seqs.push_back({s, {}});
    std::vector<float> out(static_cast<size_t>(batch) * config.hidden_size);
    const double t = TimeIt(
        [&] { (void)(*bert)->Embed(seqs, native::Pooling::kCls, false, out.data(), o.threads); }, o.seconds);
    f.tokens_per_s[batch] = batch * o.seq / t;
    if (batch == 1) f.b1_latency_ms = t * 1e3;
    if (batch == 32) f.b32_gflops = ModelFlops(config, batch, o.seq) / t / 1e9;
    std::fprintf(stderr, "  shoal %s batch %2d: %8.0f tokens/s (%.2f ms per batch)\n",
                 precision == Precision::kBF16 ? "bf16" : "f32 ", batch, f.tokens_per_s[batch], t * 1e3);
  }
  return f;
}

double PeerTokens(const nlohmann::json& peer, int batch) {
  const std::string key = "b" + std::to_string(batch) + "_tokens_per_s";
  return peer.contains(key) ? peer[key].get<double>() : NAN;
}

int Run(const Options& o) {
  const std::string models_dir = GenerateBenchModels(o.source_dir, o.models_dir, "encoders");
  if (models_dir.empty()) return 1;
  nlohmann::json out;
  const std::string secs = std::to_string(o.seconds);
  std::fprintf(stderr, "encoders: GEMM ceiling, 1024^3 on %d thread(s)\n", o.threads);
  const double ceiling_f32 = GemmCeiling(Precision::kF32, o.threads, o.seconds);
  const double ceiling_bf16 = GemmCeiling(Precision::kBF16, o.threads, o.seconds);
  std::fprintf(stderr, "  f32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n", ceiling_f32, ceiling_bf16);
  out["gemm_ceiling_f32_gflops"] = ceiling_f32;
  out["gemm_ceiling_bf16_gflops"] = ceiling_bf16;

  std::printf("\n%-16s %-14s %12s %12s %12s %14s\n", "model", "engine", "b1 tok/s", "b8 tok/s", "b32 tok/s",
              "b1 latency ms");
  for (const std::string& name : o.models) {
    const std::string dir = models_dir + "/" + name;
    const std::string key = name == "bert-base"         ? "bertbase"
                            : name == "modernbert-base" ? "modernbert"
                            : name == "xlmr-base"       ? "xlmr"
                                                        : "minilm";
    auto config = native::LoadEncoderConfig(dir);
    if (!config.ok()) {
      std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "encoders: %s\n", name.c_str());
    nlohmann::json torch, torch_bf16, ort;
    if (o.peers) {
      std::string onnx = models_dir + "/onnx/" + name + ".onnx";
      std::system(("mkdir -p " + models_dir + "/onnx").c_str());
      if (std::system(("test -f " + onnx + ".check.json || /usr/bin/python3 " + o.source_dir +
                       "/bench/encoders/export_onnx.py " + dir + " " + onnx + " > " + onnx + ".log 2>&1")
                          .c_str()) != 0) {
        std::fprintf(stderr, "  ONNX export failed: see %s.log\n", onnx.c_str());
        return 1;
      }
      torch = RunPeer("/usr/bin/python3 " + o.source_dir + "/bench/encoders/torch_peer.py " + dir +
                      " --seconds " + secs);
      torch_bf16 = RunPeer("/usr/bin/python3 " + o.source_dir + "/bench/encoders/torch_peer.py " + dir +
                           " --dtype bfloat16 --seconds " + secs);
      ort = RunPeer("node " + o.source_dir + "/bench/encoders/ort_peer.mjs " + onnx + " --seconds " + secs);
    }
    const ShoalFigures f32 = MeasureShoal(dir, *config, Precision::kF32, o);
    const ShoalFigures bf16 = MeasureShoal(dir, *config, Precision::kBF16, o);

    auto row = [&](const char* engine, auto tokens, double latency) {
      std::printf("%-16s %-14s %12.0f %12.0f %12.0f %14.2f\n", name.c_str(), engine, tokens(1), tokens(8),
                  tokens(32), latency);
    };
    if (!torch.is_discarded() && !torch.empty()) {
      row("torch", [&](int b) { return PeerTokens(torch, b); }, torch.value("b1_latency_ms", NAN));
    }
    if (!torch_bf16.is_discarded() && !torch_bf16.empty()) {
      row("torch bf16", [&](int b) { return PeerTokens(torch_bf16, b); }, torch_bf16.value("b1_latency_ms", NAN));
    }
    if (!ort.is_discarded() && !ort.empty()) {
      row("onnxruntime", [&](int b) { return PeerTokens(ort, b); }, ort.value("b1_latency_ms", NAN));
    }
    row("shoal f32", [&](int b) { return f32.tokens_per_s.at(b); }, f32.b1_latency_ms);
    row("shoal bf16", [&](int b) { return bf16.tokens_per_s.at(b); }, bf16.b1_latency_ms);

    for (const auto& [label, f] : {std::pair{"", &f32}, std::pair{"_bf16", &bf16}}) {
      const double mine = f->tokens_per_s.at(32);
      out[key + "_b32" + label + "_tokens_per_s"] = mine;
      out[key + "_b1" + label + "_latency_ms"] = f->b1_latency_ms;
      if (o.peers) {
        out[key + "_b32" + label + "_vs_torch"] = mine / PeerTokens(torch, 32);
        out[key + "_b32" + label + "_vs_ort"] = mine / PeerTokens(ort, 32);
        out[key + "_b1" + label + "_latency_vs_ort"] = f->b1_latency_ms / ort.value("b1_latency_ms", NAN);
      }
    }
    out[key + "_b32_gemm_fraction"] = f32.b32_gflops / ceiling_f32;
    out[key + "_b32_bf16_gemm_fraction"] = bf16.b32_gflops / ceiling_bf16;
    if (o.peers) {
      // The same precision on both sides: Shoal bf16 against torch bf16 (ONNX
      // Runtime's CPU provider has no bf16 GEMMs).
      out[key + "_b32_bf16_vs_torch_bf16"] = bf16.tokens_per_s.at(32) / PeerTokens(torch_bf16, 32);
      out[key + "_torch_b32_tokens_per_s"] = PeerTokens(torch, 32);
      out[key + "_torch_bf16_b32_tokens_per_s"] = PeerTokens(torch_bf16, 32);
      out[key + "_ort_b32_tokens_per_s"] = PeerTokens(ort, 32);
      out[key + "_ort_b1_latency_ms"] = ort.value("b1_latency_ms", NAN);
    }
  }
  // The headline keys (issue 3): f32 against the peers' f32.
  if (o.peers) {
    out["b1_latency_vs_ort"] = std::max(out.value("minilm_b1_latency_vs_ort", NAN),
                                        out.value("bertbase_b1_latency_vs_ort", NAN));
  }
  out["gemm_fraction"] = out.value("bertbase_b32_gemm_fraction", NAN);
  std::printf("\n%s\n", out.dump(2).c_str());
  if (!o.out.empty()) {
    std::ofstream(o.out) << out.dump(2) << "\n";
    std::fprintf(stderr, "encoders: wrote %s\n", o.out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Encoder throughput: Shoal's native engine against PyTorch and ONNX Runtime"};
  app.add_option("--models-dir", o.models_dir, "where the bench models are generated (default: build-models)");
  app.add_option("--models", o.models, "which models")->capture_default_str();
  app.add_option("--seconds", o.seconds, "measuring time per batch size")->capture_default_str();
  app.add_option("--threads", o.threads, "Shoal's threads")->capture_default_str();
  app.add_flag("!--no-peers", o.peers, "measure Shoal alone");
  app.add_option("--out", o.out, "write the figures here (docs/bench/encoders.json)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
