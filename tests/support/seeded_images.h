// Seeded test images, written by PIL (an encoder independent of Shoal's
// decoders) into `dir`: a.png, a 32 × 32 gradient with a noisy third
// channel; b.png, 32 × 32 noise; big.png, 600 × 700 noise (over the
// gateway's 1 MB, so it travels through the payload store).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shoal::testing {

inline bool WriteSeededImages(const std::filesystem::path& dir, int seed) {
  const std::string script =
      "import sys, numpy as np\nfrom PIL import Image\nd = sys.argv[1]\n"
      "r = np.random.default_rng(" + std::to_string(seed) + ")\ny, x = np.mgrid[0:32, 0:32]\n"
      "Image.fromarray(np.stack([x * 8, y * 8, r.integers(0, 256, (32, 32))], -1).astype(np.uint8))"
      ".save(d + '/a.png')\n"
      "Image.fromarray(r.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(d + '/b.png')\n"
      "Image.fromarray(r.integers(0, 256, (600, 700, 3), dtype=np.uint8)).save(d + '/big.png')\n";
  std::ofstream(dir / "images.py") << script;
  return std::system(("/usr/bin/python3 " + (dir / "images.py").string() + " " + dir.string()).c_str()) == 0;
}

}  // namespace shoal::testing
