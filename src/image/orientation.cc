#include "image/orientation.h"

#include <cstdint>
#include <cstring>
#include <utility>

namespace shoal::image {

int ExifOrientation(std::string_view exif) {
  if (exif.substr(0, 6) == std::string_view("Exif\0\0", 6)) exif.remove_prefix(6);
  const auto* p = reinterpret_cast<const unsigned char*>(exif.data());
  const size_t n = exif.size();
  if (n < 8) return 1;
  const bool little = std::memcmp(p, "II*\0", 4) == 0;
  if (!little && std::memcmp(p, "MM\0*", 4) != 0) return 1;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? p[at] | (p[at + 1] << 8) : (p[at] << 8) | p[at + 1];
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  const size_t ifd = u32(4);  // the first image file directory (IFD0)
  if (ifd > n - 2) return 1;
  const uint32_t entries = u16(ifd);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + size_t{i} * 12;
    if (e + 12 > n) return 1;
    if (u16(e) != 0x0112) continue;
    if (u16(e + 2) != 3 || u32(e + 4) != 1) return 1;  // one SHORT, stored in the entry itself
    const uint32_t v = u16(e + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

Image Orient(Image in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const uint32_t w = in.width, h = in.height;
  const bool swap = orientation >= 5;
  Image out = BlankImage(swap ? h : w, swap ? w : h);
  for (uint32_t y = 0; y < out.height; ++y) {
    for (uint32_t x = 0; x < out.width; ++x) {
      uint32_t sx = x, sy = y;  // where in the input this output pixel comes from
      switch (orientation) {
        case 2: sx = w - 1 - x; break;
        case 3: sx = w - 1 - x, sy = h - 1 - y; break;
        case 4: sy = h - 1 - y; break;
        case 5: sx = y, sy = x; break;
        case 6: sx = y, sy = h - 1 - x; break;
        case 7: sx = w - 1 - y, sy = h - 1 - x; break;
        case 8: sx = w - 1 - y, sy = x; break;
      }
      std::memcpy(out.Pixel(x, y), in.Pixel(sx, sy), 3);
    }
  }
  return out;
}

}  // namespace shoal::image
