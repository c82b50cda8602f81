// What preparing an image for a vision model costs (issue 25's
// `preprocess_ms_per_1mp`): a 1 MP photo-like JPEG (1280 × 800, quality 90,
// written by PIL) decoded and prepared for CLIP (shortest edge 224 bicubic,
// centre crop 224, rescale, normalize) by Shoal's image library
// (image/decode.h, image/processor.h) against the same steps in PIL and
// numpy (bench/images/pil_peer.py, the way Hugging Face's processors run
// them; the two are equal to the bit in tests/unit/image_test.cc). One
// thread each, the same file, in this run; --images per round, --repeats
// rounds, the median round kept. Decoding alone is timed too.
//
// Then the image tower itself (`vit_b32_vs_ort`): a ViT-B/16-shaped
// classifier (scripts/make-test-vision-models --bench: 224² in 16 × 16
// patches, 768 wide, 12 layers, seeded F32 weights) on batches of 32 images,
// Shoal's native tower (models/vision_transformer.h) against PyTorch
// (bench/images/vit_peer.py: Debian's torch, eager, the faster of its two
// thread settings) and ONNX Runtime (bench/images/ort_peer.mjs on that
// module's ONNX export, the faster of 1 and 2 intra-op threads), all f32,
// 2 threads for Shoal; --tower-repeats timed batches each after a warm-up,
// the median kept. The decode + preprocess time per image is then set
// against the tower's time per image.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "bench_options.h"
#include "figures.h"
#include "image/decode.h"
#include "image/processor.h"
#include "run_peer.h"
#include "runtime/native/models/vision_transformer.h"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/images.json";
  std::string models_dir;
  int images = 50;
  int repeats = 5;
  int batch = 32;
  int tower_repeats = 3;
  bool tower = true;
};

double MsPerImage(Clock::time_point t0, int images) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / images;
}

// The ViT-B/16 tower: Shoal, PyTorch, ONNX Runtime; adds its figures.
bool Tower(const Options& o, double preprocess_ms, std::map<std::string, double>* figures) {
  namespace fs = std::filesystem;
  const std::string models = o.models_dir.empty() ? o.source_dir + "/build-models" : o.models_dir;
  std::fprintf(stderr, "images: generating vit-b16-bench in %s (once)\n", models.c_str());
  if (std::system((o.source_dir + "/scripts/make-test-vision-models " + models + " --bench >&2").c_str()) != 0) {
    return false;
  }
  const std::string dir = models + "/vit-b16-bench", onnx = models + "/vit-b16-bench-onnx/model.onnx";
  const std::string peer = "/usr/bin/python3 " + o.source_dir + "/bench/images/vit_peer.py";
  if (fs::last_write_time(dir + "/model.safetensors") > (fs::exists(onnx) ? fs::last_write_time(onnx) : fs::file_time_type::min())) {
    std::fprintf(stderr, "images: exporting it to ONNX (once)\n");
    fs::create_directories(fs::path(onnx).parent_path());
    if (std::system((peer + " export " + dir + " " + onnx + " >&2").c_str()) != 0) return false;
  }

  std::ifstream cf(dir + "/config.json");
  auto config = native::VisionConfig::FromJson(nlohmann::json::parse(cf));
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), false;
  auto tower = native::VisionTransformer::Load(dir, *config, native::cpu::Precision::kF32);
  if (!tower.ok()) return std::fprintf(stderr, "%s\n", tower.status().ToString().c_str()), false;
  const uint32_t side = config->image_size;
  std::vector<image::PixelValues> pixels(o.batch, {side, side, std::vector<float>(3u * side * side)});
  uint32_t seed = 1;
  for (auto& p : pixels) {
    for (float& v : p.chw) v = static_cast<float>((seed = seed * 1103515245u + 12345u) >> 8) / (1u << 24) * 4 - 2;
  }
  std::vector<float> out;
  std::vector<double> shoal;
  (void)(*tower)->Forward(pixels, &out, 2);  // warm-up
  for (int r = 0; r < o.tower_repeats; ++r) {
    const auto t0 = Clock::now();
    if (!(*tower)->Forward(pixels, &out, 2).ok()) return false;
    shoal.push_back(o.batch / std::chrono::duration<double>(Clock::now() - t0).count());
    std::fprintf(stderr, "images: Shoal's tower, batch %d/%d: %.2f images/s\n", r + 1, o.tower_repeats, shoal.back());
  }
  tower->reset();

  const std::string args = " " + std::to_string(o.batch) + " " + std::to_string(o.tower_repeats);
  double torch = 0;
  int torch_threads = 0;
  for (int threads : {1, 2}) {  // OpenBLAS at 2 either way
    const nlohmann::json t = RunPeer("OPENBLAS_NUM_THREADS=2 " + peer + " torch " + dir + args + " " +
                                     std::to_string(threads));
    if (!t.is_object()) return false;
    const double rate = Median(t["images_per_s"].get<std::vector<double>>());
    if (rate > torch) torch = rate, torch_threads = threads;
  }
  const nlohmann::json ort = RunPeer("node " + o.source_dir + "/bench/images/ort_peer.mjs " + onnx + args);
  if (!ort.is_object()) return false;
  const double s = Median(shoal), r = Median(ort["images_per_s"].get<std::vector<double>>());
  std::printf("ViT-B/16 at 224x224, batch %d, f32, median of %d batches (images/s)\n", o.batch, o.tower_repeats);
  std::printf("  Shoal %.2f (2 threads), PyTorch %.2f (%d + OpenBLAS 2), ONNX Runtime %.2f (%d intra-op)\n", s, torch,
              torch_threads, r, ort["threads"].get<int>());
  std::printf("  Shoal / ONNX Runtime %.2fx, Shoal / PyTorch %.2fx; decode + preprocess is %.0f %% of the tower's "
              "time per image\n", s / r, s / torch, 100.0 * preprocess_ms / (1000.0 / s));
  (*figures)["vit_b32_images_per_s"] = s;
  (*figures)["vit_b32_torch_images_per_s"] = torch;
  (*figures)["vit_b32_ort_images_per_s"] = r;
  (*figures)["vit_b32_vs_ort"] = s / r;
  (*figures)["vit_b32_vs_torch"] = s / torch;
  (*figures)["preprocess_over_tower"] = preprocess_ms / (1000.0 / s);
  return true;
}

int Run(const Options& o) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shoal-images-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string peer = "/usr/bin/python3 " + o.source_dir + "/bench/images/pil_peer.py";
  const std::string jpeg = (dir / "photo-1mp.jpg").string(), config_file = (dir / "clip.json").string();
  if (std::system((peer + " make " + jpeg + " 1280 800").c_str()) != 0) return 1;
  const nlohmann::json config = {{"image_processor_type", "CLIPImageProcessor"}};
  std::ofstream(config_file) << config.dump();
  std::ifstream f(jpeg, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  auto processor = image::ImageProcessor::FromConfig(config);
  if (!processor.ok()) return std::fprintf(stderr, "%s\n", processor.status().ToString().c_str()), 1;

  std::fprintf(stderr, "images: PIL and numpy, %d rounds of %d images\n", o.repeats, o.images);
  const nlohmann::json pil = RunPeer(peer + " run " + jpeg + " " + config_file + " " + std::to_string(o.images) +
                                     " " + std::to_string(o.repeats));
  fs::remove_all(dir);
  if (!pil.is_object()) return 1;

  std::vector<double> decode, total;
  for (int r = 0; r < o.repeats; ++r) {
    std::fprintf(stderr, "images: Shoal, round %d/%d\n", r + 1, o.repeats);
    auto t0 = Clock::now();
    for (int i = 0; i < o.images; ++i) {
      if (!image::DecodeImage(bytes).ok()) return 1;
    }
    decode.push_back(MsPerImage(t0, o.images));
    t0 = Clock::now();
    for (int i = 0; i < o.images; ++i) {
      auto img = image::DecodeImage(bytes);
      if (!img.ok() || processor->Apply(*img).chw.size() != 3u * 224 * 224) return 1;
    }
    total.push_back(MsPerImage(t0, o.images));
  }
  const double sd = Median(decode), st = Median(total);
  const double pd = Median(pil["decode_ms"].get<std::vector<double>>());
  const double pt = Median(pil["total_ms"].get<std::vector<double>>());
  std::printf("1 MP JPEG (1280 x 800) to CLIP's 3 x 224 x 224, one thread, median of %d rounds of %d\n", o.repeats,
              o.images);
  std::printf("%-26s %10s %10s %8s\n", "", "Shoal ms", "PIL ms", "PIL/Shoal");
  std::printf("%-26s %10.2f %10.2f %7.2fx\n", "decode", sd, pd, pd / sd);
  std::printf("%-26s %10.2f %10.2f %7.2fx\n", "decode + preprocess", st, pt, pt / st);
  std::map<std::string, double> figures = {{"preprocess_ms_per_1mp", st},
                                           {"pil_preprocess_ms_per_1mp", pt},
                                           {"preprocess_speedup_vs_pil", pt / st},
                                           {"decode_ms_per_1mp", sd},
                                           {"pil_decode_ms_per_1mp", pd}};
  if (o.tower && !Tower(o, st, &figures)) return 1;
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"what preparing an image costs, against PIL; an image tower against PyTorch and ONNX Runtime"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--images", o.images, "images per round");
  app.add_option("--batch", o.batch, "images per tower batch");
  app.add_option("--tower-repeats", o.tower_repeats, "timed tower batches per engine (median kept)");
  app.add_flag("!--no-tower", o.tower, "the preprocessing figures only");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
