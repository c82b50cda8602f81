// JPEG through libjpeg-turbo, with the library's defaults that PIL keeps
// (islow DCT, fancy upsampling), so the pixels equal PIL's.
//
// libjpeg reports errors by calling error_exit, which must not return: it
// longjmps back here. Only objects made before setjmp live across it.
// Corrupt-data warnings (a truncated file, a bad Huffman code) fail the
// image too, except extraneous bytes between markers, which lose nothing.
#include <csetjmp>
#include <cstdio>
#include <string>

#include <jpeglib.h>
#include <jerror.h>

#include "image/codecs.h"

namespace shoal::image {
namespace {

struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegFail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

void JpegMessage(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code != JWRN_EXTRANEOUS_DATA) JpegFail(c);
}

// PIL's CMYK to RGB: (255 - k) less c's share of it, in integers.
uint8_t FromCmyk(int c, int k) {
  const int nk = 255 - k;
  const int t = c * nk + 128;
  const int v = nk - (((t >> 8) + t) >> 8);
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

Result<DecodedImage> DecodeJpeg(std::string_view bytes, const ImageHeader& header) {
  DecodedImage out;
  std::vector<JSAMPLE> row;
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = JpegFail;
  errors.mgr.emit_message = JpegMessage;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return InvalidInput(std::string("JPEG image cannot be decoded: ") + errors.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (Status s = CheckDecodedSize(header, cinfo.output_width, cinfo.output_height); !s.ok()) {
    jpeg_destroy_decompress(&cinfo);
    return s;
  }
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    const std::string_view data(reinterpret_cast<const char*>(m->data), m->data_length);
    if (m->marker == JPEG_APP0 + 1 && data.substr(0, 6) == std::string_view("Exif\0\0", 6)) {
      out.exif.assign(data);
      break;
    }
  }
  out.image = BlankImage(cinfo.output_width, cinfo.output_height);
  row.resize(static_cast<size_t>(cinfo.output_width) * cinfo.output_components);
  const bool inverted = cmyk && cinfo.saw_Adobe_marker;  // Adobe writes CMYK inverted
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* dst = out.image.Pixel(0, cinfo.output_scanline);
    JSAMPROW rows[1] = {cmyk ? row.data() : dst};
    jpeg_read_scanlines(&cinfo, rows, 1);
    if (!cmyk) continue;
    for (uint32_t x = 0; x < cinfo.output_width; ++x) {
      const JSAMPLE* p = &row[x * 4];
      auto at = [&](int i) { return inverted ? 255 - p[i] : int{p[i]}; };
      for (int ch = 0; ch < 3; ++ch) dst[x * 3 + ch] = FromCmyk(at(ch), at(3));
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return out;
}

}  // namespace shoal::image
