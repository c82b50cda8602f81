// PNG through libpng's classic interface, with the transforms that give
// PIL's `convert("RGB")`: palettes and grey expanded, 16-bit samples cut to
// their high byte, alpha (and tRNS) stripped. No gamma or colour-profile
// conversion: PIL applies none either.
//
// libpng reports errors by longjmp to the setjmp below; only objects made
// before it live across it. Warnings (a bad ancillary chunk) do not fail
// the image.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include "image/codecs.h"

namespace shoal::image {
namespace {

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t at = 0;
  char message[192] = {};
};

void PngRead(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->at) png_error(png, "the file ends before the image does (truncated)");
  std::memcpy(out, src->data + src->at, n);
  src->at += n;
}

void PngFail(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", message);
  png_longjmp(png, 1);
}

void PngWarn(png_structp, png_const_charp) {}

}  // namespace

Result<DecodedImage> DecodePng(std::string_view bytes, const ImageHeader& header) {
  DecodedImage out;
  std::vector<png_bytep> rows;
  PngSource src{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, PngFail, PngWarn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return Internal("libpng could not allocate its state");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return InvalidInput(std::string("PNG image cannot be decoded: ") + src.message);
  }
  png_set_read_fn(png, &src, PngRead);
  png_set_user_limits(png, header.width, header.height);  // rows past the header's size are an error
  png_read_info(png, info);
  const png_byte type = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const uint32_t width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  if (Status s = CheckDecodedSize(header, width, height); !s.ok() || png_get_rowbytes(png, info) != width * 3u) {
    png_destroy_read_struct(&png, &info, nullptr);
    return s.ok() ? Internal("libpng's transforms did not give 8-bit RGB rows") : s;
  }
  out.image = BlankImage(width, height);
  rows.resize(height);
  for (uint32_t y = 0; y < height; ++y) rows[y] = out.image.Pixel(0, y);
  png_read_image(png, rows.data());
  png_read_end(png, info);  // an eXIf chunk may come after the image data
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(png, info, &exif_size, &exif) != 0 && exif) {
    out.exif.assign(reinterpret_cast<const char*>(exif), exif_size);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return out;
}

}  // namespace shoal::image
