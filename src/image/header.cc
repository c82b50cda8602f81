#include "image/header.h"

#include <cstring>
#include <string>

namespace shoal::image {
namespace {

uint32_t Be16(const unsigned char* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Be32(const unsigned char* p) { return (Be16(p) << 16) | Be16(p + 2); }
uint32_t Le16(const unsigned char* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }
uint32_t Le24(const unsigned char* p) { return Le16(p) | (uint32_t{p[2]} << 16); }

Status Truncated(ImageFormat f) {
  return InvalidInput(std::string(FormatName(f)) + " image is truncated before its size");
}

// JPEG: markers from SOI until a start-of-frame (C0–CF but C4 DHT, C8 JPG,
// CC DAC), whose payload holds precision, height, width; every marker but
// the stand-alone ones carries its length.
Result<ImageHeader> Jpeg(const unsigned char* p, size_t n) {
  size_t i = 2;
  while (true) {
    while (i < n && p[i] == 0xFF) ++i;  // fill bytes, and the marker's own FF
    if (i + 3 > n) return Truncated(ImageFormat::kJpeg);
    const unsigned char m = p[i];
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // TEM and RSTn stand alone: no length follows
      ++i;
      continue;
    }
    if (m == 0xD9 || m == 0xDA) return InvalidInput("JPEG image has no frame header before its scan");
    const uint32_t len = Be16(p + i + 1);
    if (len < 2) return InvalidInput("JPEG image has a marker segment of length " + std::to_string(len));
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      if (i + 8 > n) return Truncated(ImageFormat::kJpeg);
      return ImageHeader{ImageFormat::kJpeg, Be16(p + i + 6), Be16(p + i + 4), false};
    }
    i += 1 + len;
  }
}

Result<ImageHeader> Png(const unsigned char* p, size_t n) {
  if (n < 24) return Truncated(ImageFormat::kPng);
  if (std::memcmp(p + 12, "IHDR", 4) != 0) return InvalidInput("PNG image does not start with its IHDR chunk");
  return ImageHeader{ImageFormat::kPng, Be32(p + 16), Be32(p + 20), false};
}

// WebP: RIFF, then one of the simple forms (VP8 lossy, VP8L lossless) or
// the extended one (VP8X: flags, canvas size; 0x02 is the animation flag).
Result<ImageHeader> Webp(const unsigned char* p, size_t n) {
  if (n < 30) return Truncated(ImageFormat::kWebp);
  const unsigned char* c = p + 12;  // the first chunk's FourCC
  if (std::memcmp(c, "VP8X", 4) == 0) {
    return ImageHeader{ImageFormat::kWebp, Le24(c + 12) + 1, Le24(c + 15) + 1, (c[8] & 0x02) != 0};
  }
  if (std::memcmp(c, "VP8L", 4) == 0) {
    if (c[8] != 0x2F) return InvalidInput("WebP image has a lossless stream without its signature");
    const uint32_t bits = uint32_t{c[9]} | (uint32_t{c[10]} << 8) | (uint32_t{c[11]} << 16) | (uint32_t{c[12]} << 24);
    return ImageHeader{ImageFormat::kWebp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, false};
  }
  if (std::memcmp(c, "VP8 ", 4) == 0) {
    if (c[11] != 0x9D || c[12] != 0x01 || c[13] != 0x2A) {
      return InvalidInput("WebP image has a lossy stream without its start code");
    }
    return ImageHeader{ImageFormat::kWebp, Le16(c + 14) & 0x3FFF, Le16(c + 16) & 0x3FFF, false};
  }
  return InvalidInput("WebP image starts with an unknown chunk '" + std::string(reinterpret_cast<const char*>(c), 4) +
                      "'");
}

Result<ImageHeader> Gif(const unsigned char* p, size_t n) {
  if (n < 10) return Truncated(ImageFormat::kGif);
  return ImageHeader{ImageFormat::kGif, Le16(p + 6), Le16(p + 8), false};
}

// What the first bytes look like, for the refusal of an unknown format.
std::string Describe(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789ABCDEF";
  std::string s;
  for (size_t i = 0; i < n && i < 8; ++i) {
    if (i) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s.empty() ? "no bytes" : "bytes " + s;
}

Result<ImageHeader> Sniff(const unsigned char* p, size_t n) {
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return Jpeg(p, n);
  if (n >= 8 && std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return Png(p, n);
  if (n >= 12 && std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0) return Webp(p, n);
  if (n >= 6 && (std::memcmp(p, "GIF87a", 6) == 0 || std::memcmp(p, "GIF89a", 6) == 0)) return Gif(p, n);
  return InvalidInput("not an image Shoal decodes (JPEG, PNG, WebP or GIF): it starts with " + Describe(p, n));
}

}  // namespace

std::string_view FormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kGif: return "GIF";
  }
  return "image";
}

Result<ImageHeader> ReadImageHeader(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  SHOAL_ASSIGN_OR_RETURN(ImageHeader h, Sniff(p, n));
  if (h.width == 0 || h.height == 0) {
    return InvalidInput(std::string(FormatName(h.format)) + " image is " + std::to_string(h.width) + " × " +
                        std::to_string(h.height) + " pixels");
  }
  return h;
}

}  // namespace shoal::image
