// The CUDA encoder's throughput and latency on a BERT-base-shaped model,
// against PyTorch (transformers' BertModel in bf16 with SDPA attention,
// bench/cuda/torch_encoder_peer.py; also under torch.compile at its knee) on
// the same GPU in the same run (issues 10 and 28), with an A/B of the
// backend's kernel choices (CudaKernelChoice) in the same run.
//
// For each sequence length: batches of 1, 2, 4, ... sequences until the
// throughput stops rising (the knee: under 3 % gained by two doublings in a
// row) or the GPU's memory runs out; tokens/s is tokens per batch over the
// median batch time. Then the same batch sizes through PyTorch. Then, at the
// first length, latency under open-loop load at half the knee's throughput:
// single-sequence requests arrive as a Poisson process, one server thread
// takes everything that has arrived (up to the knee's batch) as one batch,
// and each request's latency is from its arrival to its batch's end. This
// is the model alone on the GPU (no network, no queue), so it is the floor
// a worker's latency adds to.
//
// usage: cuda_encoder_bench --model DIR [--seq-lens 128,512] [--max-batch 2048]
//          [--torch-peer bench/cuda/torch_encoder_peer.py] [--torch-compile-len 128]
//          [--python python3] [--out docs/bench/gpu.json]
// Writes tokens_per_s_len{L}, torch_tokens_per_s_len{L}, len{L}_vs_torch,
// torch_compile_tokens_per_s_len{L}, len{L}_vs_torch_compile,
// knee_batch_len{L}, p50_ms_half_knee, p99_ms_half_knee (the serving
// kernels), and the A/B's register_attention_tokens_per_s_len{L},
// register_epilogue_tokens_per_s_len{L}, len{L}_register_over_staged,
// len{L}_epilogue_over_separate.
#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "figures.h"
#include "common/str_printf.h"
#include "runtime/native/kernels/cuda/device_memory.h"
#include "runtime/native/models/bert_cuda.h"

namespace shoal::bench {
namespace {

using native::CudaBert;
using native::TokenSequence;
using Clock = std::chrono::steady_clock;

struct Point {
  size_t batch = 0;
  double ms_median = 0;
  double tokens_per_s = 0;
};

// Seeded token ids in [1000, vocab): no special or pad ids.
std::vector<std::vector<int32_t>> RandomSequences(size_t count, size_t len, uint32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t low = vocab > 2000 ? 1000 : vocab / 2;
  std::vector<std::vector<int32_t>> seqs(count, std::vector<int32_t>(len));
  for (auto& s : seqs) {
    for (auto& id : s) id = static_cast<int32_t>(low + rng() % (vocab - low));
  }
  return seqs;
}

std::vector<TokenSequence> Views(const std::vector<std::vector<int32_t>>& ids) {
  std::vector<TokenSequence> v;
  for (const auto& s : ids) v.push_back({s, {}});
  return v;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Median batch time of `batch` sequences of `len`, repeated for min_seconds.
Result<Point> Measure(const CudaBert& m, size_t batch, size_t len, double min_seconds) {
  const auto ids = RandomSequences(batch, len, m.config().vocab_size, static_cast<uint32_t>(batch * 131 + len));
  const auto seqs = Views(ids);
  std::vector<float> out(batch * m.config().hidden_size);
  for (int i = 0; i < 3; ++i) SHOAL_RETURN_IF_ERROR(m.Embed(seqs, native::Pooling::kCls, false, out.data(), 1));
  std::vector<double> ms;
  const auto start = Clock::now();
  while (ms.size() < 5 || Ms(Clock::now() - start) < min_seconds * 1000) {
    const auto t0 = Clock::now();
    SHOAL_RETURN_IF_ERROR(m.Embed(seqs, native::Pooling::kCls, false, out.data(), 1));
    ms.push_back(Ms(Clock::now() - t0));
  }
  Point p;
  p.batch = batch;
  p.ms_median = Median(ms);
  p.tokens_per_s = static_cast<double>(batch * len) / (p.ms_median / 1000);
  return p;
}

// Batches of 1, 2, 4, ... until the knee or max_batch.
std::vector<Point> Sweep(const CudaBert& m, size_t len, size_t max_batch, double min_seconds) {
  std::vector<Point> points;
  int flat = 0;
  double best = 0;
  for (size_t b = 1; b <= max_batch; b *= 2) {
    auto p = Measure(m, b, len, min_seconds);
    if (!p.ok()) {
      std::fprintf(stderr, "  batch %zu: %s (sweep ends)\n", b, p.status().ToString().c_str());
      break;
    }
    std::fprintf(stderr, "  shoal len %zu batch %5zu: %8.2f ms  %12.0f tokens/s\n", len, b, p->ms_median,
                 p->tokens_per_s);
    points.push_back(*p);
    flat = p->tokens_per_s < best * 1.03 ? flat + 1 : 0;
    best = std::max(best, p->tokens_per_s);
    if (flat >= 2) break;
  }
  return points;
}

const Point& Best(const std::vector<Point>& points) {
  return *std::max_element(points.begin(), points.end(),
                           [](const Point& a, const Point& b) { return a.tokens_per_s < b.tokens_per_s; });
}

// PyTorch's points for the same batch sizes, from the peer script's JSON.
std::vector<Point> TorchSweep(const std::string& python, const std::string& script, const std::string& model,
                              size_t len, const std::vector<Point>& ours, double min_seconds, bool compile) {
  std::string batches;
  for (const Point& p : ours) batches += (batches.empty() ? "" : ",") + std::to_string(p.batch);
  const std::string cmd = python + " " + script + " " + model + " --seq-len " + std::to_string(len) +
                          " --batches " + batches + " --min-seconds " + std::to_string(min_seconds) +
                          (compile ? " --compile" : "");
  std::fprintf(stderr, "  %s\n", cmd.c_str());
  std::vector<Point> points;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return points;
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  if (::pclose(f) != 0) {
    std::fprintf(stderr, "  the PyTorch peer failed\n");
    return points;
  }
  try {
    const nlohmann::json report = nlohmann::json::parse(text);  // outlives the loop below
    for (const auto& p : report.at("points")) {
      points.push_back({p.at("batch").get<size_t>(), p.at("ms_median").get<double>(),
                        p.at("tokens_per_s").get<double>()});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  the PyTorch peer's output is not what was expected: %s\n", e.what());
  }
  return points;
}

// Where the GPU time of one batch of `batch` sequences of `len` goes.
void PrintProfile(const CudaBert& m, size_t len, size_t batch, const std::string& name) {
  const auto ids = RandomSequences(batch, len, m.config().vocab_size, 5);
  auto stages = m.ProfileEmbed(Views(ids));
  if (!stages.ok()) {
    std::fprintf(stderr, "  profile: %s\n", stages.status().ToString().c_str());
    return;
  }
  double total = 0;
  for (const auto& [name, ms] : *stages) total += ms;
  std::printf("%s, len %zu batch %zu, GPU time by stage (%.2f ms in all):", name.c_str(), len, batch, total);
  for (const auto& [name, ms] : *stages) std::printf("  %s %.2f ms (%.0f%%)", name.c_str(), ms, 100 * ms / total);
  std::printf("\n");
  std::fflush(stdout);
}

struct Latency {
  double p50_ms = NAN, p99_ms = NAN, offered_per_s = 0;
  size_t requests = 0;
};

// Open-loop load at `rate` sequences/s for `seconds`; batches of up to
// `max_batch` of whatever has arrived.
Latency OpenLoop(const CudaBert& m, size_t len, double rate, size_t max_batch, double seconds) {
  const auto ids = RandomSequences(max_batch, len, m.config().vocab_size, 99);
  const auto all = Views(ids);
  std::vector<float> out(max_batch * m.config().hidden_size);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Clock::time_point> arrived;  // guarded by mu
  bool done = false;                     // guarded by mu
  std::vector<double> latencies;

  std::thread server([&] {
    for (;;) {
      std::vector<Clock::time_point> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done || !arrived.empty(); });
        if (arrived.empty()) return;
        while (!arrived.empty() && batch.size() < max_batch) {
          batch.push_back(arrived.front());
          arrived.pop_front();
        }
      }
      const Status s = m.Embed(std::span(all.data(), batch.size()), native::Pooling::kCls, false, out.data(), 1);
      const auto end = Clock::now();
      if (!s.ok()) std::fprintf(stderr, "  batch failed: %s\n", s.ToString().c_str());
      for (const auto& t : batch) latencies.push_back(Ms(end - t));
    }
  });
  std::mt19937 rng(17);
  std::exponential_distribution<double> gap(rate);
  const auto start = Clock::now();
  auto next = start;
  size_t sent = 0;
  while (next - start < std::chrono::duration<double>(seconds)) {
    std::this_thread::sleep_until(next);
    {
      std::lock_guard<std::mutex> lock(mu);
      arrived.push_back(next);  // latency counts from the scheduled arrival
    }
    cv.notify_one();
    ++sent;
    next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  server.join();
  Latency l;
  l.requests = sent;
  l.offered_per_s = rate;
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    l.p50_ms = latencies[latencies.size() / 2];
    l.p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
  }
  return l;
}

// One kernel choice of the A/B, loaded as its own copy of the model.
struct Variant {
  std::string name;
  native::CudaKernelChoice kernels;
  std::unique_ptr<CudaBert> model;
};

int Run(int argc, char** argv) {
  CLI::App app{"The CUDA encoder against PyTorch (bf16, SDPA) on a BERT-base-shaped model"};
  std::string model, out = "docs/bench/gpu.json", peer = "bench/cuda/torch_encoder_peer.py", python = "python3";
  std::vector<size_t> lens = {128, 512};
  size_t max_batch = 2048;
  double min_seconds = 0.5, latency_seconds = 5;
  size_t compile_len = 128;
  app.add_option("--model", model, "a BERT-family model directory")->required();
  app.add_option("--seq-lens", lens, "sequence lengths")->delimiter(',');
  app.add_option("--max-batch", max_batch, "largest batch tried (sequences)");
  app.add_option("--min-seconds", min_seconds, "time per measured batch size");
  app.add_option("--latency-seconds", latency_seconds, "length of the open-loop latency run");
  app.add_option("--torch-peer", peer, "the PyTorch peer script ('' to skip)");
  app.add_option("--torch-compile-len", compile_len,
                 "also PyTorch under torch.compile at its knee, at this length (0: none; each shape compiles "
                 "for a minute)")
      ->capture_default_str();
  app.add_option("--python", python, "the Python with torch and transformers");
  app.add_option("--out", out, "the figures file");
  CLI11_PARSE(app, argc, argv);

  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress (stderr) and table lines in order in a log
  if (native::cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "cuda_encoder_bench: no CUDA GPU visible\n");
    return 1;
  }
  auto device = native::cuda::DescribeDevice(0);
  if (device.ok()) std::printf("GPU: %s, %d SMs, %.1f GiB\n", device->name.c_str(), device->multiprocessors,
                               device->total_bytes / double(1 << 30));
  auto config = native::LoadEncoderConfig(model);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  // The serving kernels (CudaKernelChoice's defaults) first; then the A/B:
  // the register attention, then the activation in the GEMM's epilogue too.
  std::vector<Variant> variants;
  variants.push_back({"serving (staged attention, separate activation)", {}, nullptr});
  variants.push_back({"register attention, separate activation", {true, false}, nullptr});
  variants.push_back({"register attention, activation in the GEMM", {true, true}, nullptr});
  for (Variant& v : variants) {
    const auto t0 = Clock::now();
    auto loaded = CudaBert::Load(model, *config, 0, 16384,
                                 [](double f) { std::fprintf(stderr, "\rloading %3.0f%%", f * 100); }, v.kernels);
    std::fprintf(stderr, "\n");
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    v.model = std::move(loaded).value();
    std::printf("model: %s (%u layers, hidden %u), %s: loaded in %.0f ms, %.0f MB on the GPU\n", model.c_str(),
                config->num_hidden_layers, config->hidden_size, v.name.c_str(), Ms(Clock::now() - t0),
                v.model->memory_bytes() / 1e6);
  }
  const CudaBert& m = *variants[0].model;

  std::map<std::string, double> figures;
  size_t first_knee_batch = 0;
  double first_knee_tps = 0;
  for (size_t len : lens) {
    if (len > config->max_tokens()) continue;
    std::vector<std::vector<Point>> sweeps;
    for (const Variant& v : variants) {
      std::fprintf(stderr, "%s\n", v.name.c_str());
      sweeps.push_back(Sweep(*v.model, len, max_batch, min_seconds));
    }
    const std::vector<Point>& ours = sweeps[0];
    if (ours.empty() || sweeps[1].empty() || sweeps[2].empty()) continue;
    const std::vector<Point> torch =
        peer.empty() ? std::vector<Point>{} : TorchSweep(python, peer, model, len, ours, min_seconds, false);
    std::printf("\n%6s %7s %10s %14s %10s %14s %7s\n", "len", "batch", "shoal ms", "shoal tok/s", "torch ms",
                "torch tok/s", "ratio");
    for (const Point& p : ours) {
      const Point* t = nullptr;
      for (const Point& q : torch) {
        if (q.batch == p.batch) t = &q;
      }
      std::printf("%6zu %7zu %10.2f %14.0f %10s %14s %7s\n", len, p.batch, p.ms_median, p.tokens_per_s,
                  t ? StrPrintf("%.2f", t->ms_median).c_str() : "-",
                  t ? StrPrintf("%.0f", t->tokens_per_s).c_str() : "-",
                  t ? StrPrintf("%.2f", p.tokens_per_s / t->tokens_per_s).c_str() : "-");
    }
    const Point& knee = Best(ours);
    const std::string L = std::to_string(len);
    for (const Variant& v : variants) PrintProfile(*v.model, len, knee.batch, v.name);
    figures["tokens_per_s_len" + L] = knee.tokens_per_s;
    figures["knee_batch_len" + L] = static_cast<double>(knee.batch);
    // The A/B, each variant at its own knee.
    const double registers = Best(sweeps[1]).tokens_per_s, epilogue = Best(sweeps[2]).tokens_per_s;
    figures["register_attention_tokens_per_s_len" + L] = registers;
    figures["register_epilogue_tokens_per_s_len" + L] = epilogue;
    figures["len" + L + "_register_over_staged"] = registers / knee.tokens_per_s;
    figures["len" + L + "_epilogue_over_separate"] = epilogue / registers;
    std::printf("len %zu A/B at each knee: %s %.0f tokens/s; %s %.0f (%.3fx); %s %.0f (%.3fx the one before)\n",
                len, variants[0].name.c_str(), knee.tokens_per_s, variants[1].name.c_str(), registers,
                registers / knee.tokens_per_s, variants[2].name.c_str(), epilogue, epilogue / registers);
    if (!torch.empty()) {
      const Point& tk = Best(torch);
      figures["torch_tokens_per_s_len" + L] = tk.tokens_per_s;
      figures["len" + L + "_vs_torch"] = knee.tokens_per_s / tk.tokens_per_s;
      std::printf("len %zu: shoal %.0f tokens/s (batch %zu), PyTorch %.0f tokens/s (batch %zu): %.2fx; the best "
                  "A/B variant %.2fx\n",
                  len, knee.tokens_per_s, knee.batch, tk.tokens_per_s, tk.batch, knee.tokens_per_s / tk.tokens_per_s,
                  std::max({knee.tokens_per_s, registers, epilogue}) / tk.tokens_per_s);
      if (len == compile_len) {
        // At PyTorch's eager knee only: each new shape compiles anew.
        const std::vector<Point> compiled = TorchSweep(python, peer, model, len, {tk}, min_seconds, true);
        if (!compiled.empty()) {
          const Point& ck = Best(compiled);
          figures["torch_compile_tokens_per_s_len" + L] = ck.tokens_per_s;
          figures["len" + L + "_vs_torch_compile"] = knee.tokens_per_s / ck.tokens_per_s;
          std::printf("len %zu: PyTorch under torch.compile %.0f tokens/s (batch %zu): shoal %.2fx\n", len,
                      ck.tokens_per_s, ck.batch, knee.tokens_per_s / ck.tokens_per_s);
        }
      }
    }
    if (first_knee_batch == 0) {
      first_knee_batch = knee.batch;
      first_knee_tps = knee.tokens_per_s;
      const double rate = 0.5 * first_knee_tps / static_cast<double>(len);
      std::fprintf(stderr, "  open loop at %.0f sequences/s (half the knee) for %.0f s\n", rate, latency_seconds);
      const Latency l = OpenLoop(m, len, rate, first_knee_batch, latency_seconds);
      std::printf("len %zu at half the knee (%.0f sequences/s, %zu requests): p50 %.2f ms, p99 %.2f ms\n", len,
                  rate, l.requests, l.p50_ms, l.p99_ms);
      figures["p50_ms_half_knee"] = l.p50_ms;
      figures["p99_ms_half_knee"] = l.p99_ms;
    }
  }
  if (!out.empty()) WriteFigures(out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) { return shoal::bench::Run(argc, argv); }
