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
// The forward pass this is set against comes with the image towers (CLIP,
// SigLIP, ViT: issue 25's next parts).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "figures.h"
#include "image/decode.h"
#include "image/processor.h"
#include "run_peer.h"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/images.json";
  int images = 50;
  int repeats = 5;
};

double MsPerImage(Clock::time_point t0, int images) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / images;
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
  WriteFigures(o.out, {{"preprocess_ms_per_1mp", st},
                       {"pil_preprocess_ms_per_1mp", pt},
                       {"preprocess_speedup_vs_pil", pt / st},
                       {"decode_ms_per_1mp", sd},
                       {"pil_decode_ms_per_1mp", pd}});
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"what preparing an image costs, against PIL"};
  app.add_option("--out", o.out, "where the figures go");
  app.add_option("--images", o.images, "images per round");
  app.add_option("--repeats", o.repeats, "rounds (median kept)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
