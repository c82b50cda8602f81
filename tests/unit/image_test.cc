// Images decoded, resized and prepared as PIL and Hugging Face's image
// processors do it: every figure compared against what
// tests/reference/image_reference.py writes with PIL (Debian's python3-pil,
// on the same libjpeg-turbo, libpng and libwebp) and numpy.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "image/decode.h"
#include "image/orientation.h"
#include "image/processor.h"
#include "image/resample.h"
#include "support/files.h"

namespace shoal::image {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's bytes ("" when it cannot be read: the comparison then fails).
std::string Bytes(const fs::path& p) { return shoal::testing::FileText(p.string()); }

class ImageReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("shoal-image-ref-" + std::to_string(::getpid()));
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_IMAGE_REFERENCE + " " + dir_.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    manifest_ = json::parse(Bytes(dir_ / "manifest.json"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Image Decoded(const std::string& name) {
    Result<Image> img = DecodeImage(Bytes(dir_ / "samples" / name));
    EXPECT_TRUE(img.ok()) << name << ": " << img.status().ToString();
    return img.ok() ? std::move(img).value() : Image{};
  }

  // Where two 8-bit images differ: "" when equal.
  static std::string Compare(const Image& got, const fs::path& want_file, uint32_t width, uint32_t height) {
    if (got.width != width || got.height != height) {
      return "size " + std::to_string(got.width) + "x" + std::to_string(got.height) + ", want " +
             std::to_string(width) + "x" + std::to_string(height);
    }
    const std::string want = Bytes(want_file);
    if (want.size() != got.rgb.size()) return "reference has " + std::to_string(want.size()) + " bytes";
    size_t differ = 0, first = 0;
    int worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const int d = std::abs(int{got.rgb[i]} - int{static_cast<uint8_t>(want[i])});
      if (d && !differ++) first = i;
      worst = std::max(worst, d);
    }
    if (!differ) return "";
    return std::to_string(differ) + " of " + std::to_string(want.size()) + " samples differ (first at pixel " +
           std::to_string(first / 3) + ", largest by " + std::to_string(worst) + ")";
  }

  static inline fs::path dir_;
  static inline json manifest_;
};

TEST_F(ImageReference, EveryFormatDecodesToPilsPixels) {
  ASSERT_EQ(manifest_["decoded"].size(), 29u);
  for (const auto& [name, size] : manifest_["decoded"].items()) {
    const Image img = Decoded(name);
    EXPECT_EQ(Compare(img, dir_ / "decoded" / (name + ".rgb"), size[0], size[1]), "") << name;
  }
}

TEST_F(ImageReference, TheExifOrientationTurnsTheImageUpright) {
  // exif-1.jpg is stored upright; each other orientation is the same pixels
  // (40 x 24 as stored) turned: 5–8 come out 24 x 40.
  for (int o = 1; o <= 8; ++o) {
    const Image img = Decoded("exif-" + std::to_string(o) + ".jpg");
    EXPECT_EQ(img.width, o >= 5 ? 24u : 40u) << o;
    EXPECT_EQ(img.height, o >= 5 ? 40u : 24u) << o;
  }
  EXPECT_EQ(Decoded("exif-6.png").width, 61u);
  EXPECT_EQ(Decoded("exif-8.webp").width, 61u);
}

TEST_F(ImageReference, AStandAloneMarkerBeforeTheFrameIsSkipped) {
  // A restart marker (FF D0, no length) between SOI and the frame header:
  // libjpeg and PIL read past it, so the header walk does too.
  const std::string jpeg = Bytes(dir_ / "samples/photo-q90.jpg");
  const std::string marked = jpeg.substr(0, 2) + "\xFF\xD0" + jpeg.substr(2);
  Result<Image> a = DecodeImage(jpeg), b = DecodeImage(marked);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  EXPECT_EQ(a->rgb, b->rgb);
}

TEST_F(ImageReference, BadImagesAreInvalidInputSayingWhy) {
  ASSERT_EQ(manifest_["refused"].size(), 9u);
  for (const auto& name : manifest_["refused"]) {
    Result<Image> img = DecodeImage(Bytes(dir_ / "samples" / name.get<std::string>()));
    ASSERT_FALSE(img.ok()) << name;
    EXPECT_EQ(img.status().code(), Code::kInvalidInput) << name << ": " << img.status().ToString();
    std::printf("%-16s %s\n", name.get<std::string>().c_str(), img.status().message().c_str());
  }
  auto message = [&](const char* name) { return DecodeImage(Bytes(dir_ / "samples" / name)).status().message(); };
  EXPECT_NE(message("bomb.png").find("400000000 pixels; the limit is 50000000"), std::string::npos);
  EXPECT_NE(message("wide.png").find("aspect ratio of 100000:1"), std::string::npos);
  EXPECT_NE(message("truncated.jpg").find("JPEG"), std::string::npos);
  EXPECT_NE(message("truncated.png").find("truncated"), std::string::npos);
  EXPECT_NE(message("animated.webp").find("animated"), std::string::npos);
  EXPECT_NE(message("text.txt").find("not an image"), std::string::npos);
  // Limits are the caller's: a lower pixel bound refuses what the default takes.
  ImageLimits small;
  small.max_pixels = 1000;
  EXPECT_EQ(DecodeImage(Bytes(dir_ / "samples/photo.png"), small).status().code(), Code::kInvalidInput);
  small = ImageLimits{};
  small.max_bytes = 100;
  EXPECT_EQ(DecodeImage(Bytes(dir_ / "samples/photo.png"), small).status().code(), Code::kInvalidInput);
}

TEST_F(ImageReference, ResizeEqualsPilForEveryFilter) {
  ASSERT_EQ(manifest_["resized"].size(), 30u);
  for (const auto& [name, c] : manifest_["resized"].items()) {
    const Image src = Decoded(c[0].get<std::string>());
    const Image got = Resize(src, c[1], c[2], *ResampleFromPil(c[3].get<int>()));
    EXPECT_EQ(Compare(got, dir_ / "resized" / (name + ".rgb"), c[1], c[2]), "") << name;
  }
}

TEST_F(ImageReference, ProcessorsGiveTransformersPixelValues) {
  for (const auto& [config, images] : manifest_["pixels"].items()) {
    Result<ImageProcessor> p = ImageProcessor::FromConfig(json::parse(Bytes(dir_ / "configs" / (config + ".json"))));
    ASSERT_TRUE(p.ok()) << config << ": " << p.status().ToString();
    for (const auto& [name, size] : images.items()) {
      const PixelValues got = p->Apply(Decoded(name));
      ASSERT_EQ(got.height, size[0].get<uint32_t>()) << config << " " << name;
      ASSERT_EQ(got.width, size[1].get<uint32_t>()) << config << " " << name;
      const std::string want = Bytes(dir_ / "pixels" / config / (name + ".f32"));
      ASSERT_EQ(want.size(), got.chw.size() * sizeof(float)) << config << " " << name;
      const auto* w = reinterpret_cast<const float*>(want.data());
      size_t differ = 0;
      for (size_t i = 0; i < got.chw.size(); ++i) differ += got.chw[i] != w[i];
      EXPECT_EQ(differ, 0u) << config << " " << name << ": first value " << got.chw[0] << " vs " << w[0];
    }
  }
}

TEST(ImageProcessorConfig, WhatItCannotDoIsRefusedNamingTheKey) {
  auto error = [](const char* text) {
    Result<ImageProcessor> p = ImageProcessor::FromConfig(json::parse(text));
    EXPECT_FALSE(p.ok()) << text;
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_NE(error(R"({"image_processor_type": "DonutImageProcessor"})").find("DonutImageProcessor"),
            std::string::npos);
  EXPECT_NE(error(R"({"image_processor_type": "ViTImageProcessor", "do_pad": true})").find("do_pad"),
            std::string::npos);
  EXPECT_NE(error(R"({"image_processor_type": "ViTImageProcessor", "resample": 7})").find("resample 7"),
            std::string::npos);
  EXPECT_NE(error(R"({"image_processor_type": "CLIPImageProcessor", "size": {"longest_edge": 9}})").find("size"),
            std::string::npos);
  EXPECT_NE(error(R"({"image_processor_type": "ViTImageProcessor", "image_std": [1, 0, 1]})").find("image_std"),
            std::string::npos);
  EXPECT_NE(error(R"({"image_processor_type": "SiglipImageProcessor", "do_resize": false})").find("do_resize"),
            std::string::npos);
  // A step that is off passes; the defaults are the processor's own.
  Result<ImageProcessor> vit = ImageProcessor::FromConfig(json::parse(R"({"image_processor_type":
      "ViTImageProcessor", "do_pad": false})"));
  ASSERT_TRUE(vit.ok());
  EXPECT_EQ(vit->height(), 224u);
  Result<ImageProcessor> clip = ImageProcessor::FromConfig(json::parse(R"({"image_processor_type":
      "CLIPImageProcessor", "do_center_crop": false})"));
  ASSERT_TRUE(clip.ok());
  EXPECT_EQ(clip->height(), 0u);  // the shortest edge alone: the output keeps the input's aspect
}

// A TIFF block by hand: byte order, IFD0 with `entries` entries, the
// orientation (type 3, count 1) at the given place.
std::string Tiff(bool little, int orientation, uint16_t type = 3) {
  std::string t;
  auto u16 = [&](uint32_t v) { t += little ? std::string{char(v), char(v >> 8)} : std::string{char(v >> 8), char(v)}; };
  auto u32 = [&](uint32_t v) { little ? (u16(v & 0xFFFF), u16(v >> 16)) : (u16(v >> 16), u16(v & 0xFFFF)); };
  t += little ? "II" : "MM";
  u16(42);
  u32(8);
  u16(2);  // two entries: an image width, then the orientation
  u16(0x0100), u16(3), u32(1), u16(640), u16(0);
  u16(0x0112), u16(type), u32(1), u16(static_cast<uint32_t>(orientation)), u16(0);
  u32(0);
  return t;
}

TEST(ExifOrientation, ReadsBothByteOrdersAndIgnoresWhatItCannotRead) {
  for (int o = 1; o <= 8; ++o) {
    EXPECT_EQ(ExifOrientation(Tiff(true, o)), o);
    EXPECT_EQ(ExifOrientation(std::string("Exif\0\0", 6) + Tiff(false, o)), o);
  }
  EXPECT_EQ(ExifOrientation(Tiff(true, 9)), 1);      // out of range
  EXPECT_EQ(ExifOrientation(Tiff(true, 6, 4)), 1);   // not a SHORT
  EXPECT_EQ(ExifOrientation(Tiff(true, 6).substr(0, 20)), 1);  // cut inside the directory
  EXPECT_EQ(ExifOrientation("Exif"), 1);
  EXPECT_EQ(ExifOrientation(""), 1);
}

TEST(Orient, EachOrientationMovesTheCornerWhereItBelongs) {
  // A 3 x 2 image whose pixels are numbered; orientation 6 (turn clockwise)
  // puts the stored top-left at the top-right.
  Image img = BlankImage(3, 2);
  for (uint32_t i = 0; i < 6; ++i) img.rgb[i * 3] = static_cast<uint8_t>(i + 1);
  auto at = [](const Image& m, uint32_t x, uint32_t y) { return m.Pixel(x, y)[0]; };
  const Image r6 = Orient(img, 6);
  ASSERT_EQ(r6.width, 2u);
  EXPECT_EQ(at(r6, 1, 0), 1);
  EXPECT_EQ(at(r6, 0, 0), 4);
  const Image r8 = Orient(img, 8);
  EXPECT_EQ(at(r8, 0, 2), 1);
  EXPECT_EQ(at(Orient(img, 3), 2, 1), 1);
  EXPECT_EQ(at(Orient(img, 2), 2, 0), 1);
  EXPECT_EQ(at(Orient(img, 4), 0, 1), 1);
  EXPECT_EQ(at(Orient(img, 5), 1, 0), 4);
  EXPECT_EQ(at(Orient(img, 7), 1, 2), 1);
}

}  // namespace
}  // namespace shoal::image
