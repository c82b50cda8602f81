// GIF through giflib: the first frame only, read record by record (giflib's
// DGifSlurp would decode every frame of an animation first), on the logical
// screen as PIL gives it: the screen filled with the frame's transparent
// index when its graphic control extension names one, else with index 0,
// the frame drawn at its offset (a frame past the screen is refused), indices mapped through the frame's colour
// table, else the global one (no table: the index is a grey level).
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "image/codecs.h"

namespace shoal::image {
namespace {

struct GifSource {
  const unsigned char* data;
  size_t size;
  size_t at = 0;
};

int GifRead(GifFileType* gif, GifByteType* out, int n) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t take = std::min(static_cast<size_t>(std::max(n, 0)), src->size - src->at);
  std::memcpy(out, src->data + src->at, take);
  src->at += take;
  return static_cast<int>(take);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};
using GifPtr = std::unique_ptr<GifFileType, GifCloser>;

Status GifError(int code) {
  const char* reason = GifErrorString(code);
  return InvalidInput(std::string("GIF image cannot be decoded: ") + (reason ? reason : "unknown error"));
}

// Reads records up to the first image descriptor; the transparent index of
// the graphic control extension before it, or -1.
Status SkipToFirstImage(GifFileType* gif, int* transparent) {
  *transparent = -1;
  while (true) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) return GifError(gif->Error);
    if (type == IMAGE_DESC_RECORD_TYPE) {
      return DGifGetImageDesc(gif) == GIF_ERROR ? GifError(gif->Error) : Status::Ok();
    }
    if (type == TERMINATE_RECORD_TYPE) return InvalidInput("GIF image has no frame");
    if (type != EXTENSION_RECORD_TYPE) continue;
    int code = 0;
    GifByteType* block = nullptr;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return GifError(gif->Error);
    if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4) *transparent = (block[1] & 1) ? block[4] : -1;
    while (block) {
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return GifError(gif->Error);
    }
  }
}

}  // namespace

Result<DecodedImage> DecodeGif(std::string_view bytes, const ImageHeader& header) {
  GifSource src{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()};
  int error = 0;
  GifPtr gif(DGifOpen(&src, GifRead, &error));
  if (!gif) return GifError(error);
  SHOAL_RETURN_IF_ERROR(CheckDecodedSize(header, static_cast<uint32_t>(gif->SWidth),
                                         static_cast<uint32_t>(gif->SHeight)));
  int transparent = -1;
  SHOAL_RETURN_IF_ERROR(SkipToFirstImage(gif.get(), &transparent));
  const GifImageDesc& frame = gif->Image;
  if (frame.Width <= 0 || frame.Height <= 0) return InvalidInput("GIF image's first frame is empty");
  const ColorMapObject* colors = frame.ColorMap ? frame.ColorMap : gif->SColorMap;

  // The frame's indices, rows in display order (an interlaced frame sends
  // every 8th row from 0, every 8th from 4, every 4th from 2, every 2nd from 1).
  const auto fw = static_cast<size_t>(frame.Width), fh = static_cast<size_t>(frame.Height);
  if (frame.Left < 0 || frame.Top < 0 || frame.Left + fw > header.width || frame.Top + fh > header.height) {
    return InvalidInput("GIF image's first frame (" + std::to_string(fw) + " × " + std::to_string(fh) + " at " +
                        std::to_string(frame.Left) + ", " + std::to_string(frame.Top) + ") extends past its " +
                        std::to_string(header.width) + " × " + std::to_string(header.height) + " screen");
  }
  std::vector<GifPixelType> indices(fw * fh);
  auto read_row = [&](size_t y) {
    return DGifGetLine(gif.get(), &indices[y * fw], static_cast<int>(fw)) == GIF_ERROR ? GifError(gif->Error)
                                                                                       : Status::Ok();
  };
  if (frame.Interlace) {
    static constexpr size_t kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass) {
      for (size_t y = kStart[pass]; y < fh; y += kStep[pass]) SHOAL_RETURN_IF_ERROR(read_row(y));
    }
  } else {
    for (size_t y = 0; y < fh; ++y) SHOAL_RETURN_IF_ERROR(read_row(y));
  }

  auto color = [&](int index, uint8_t* rgb) {
    if (!colors) {
      rgb[0] = rgb[1] = rgb[2] = static_cast<uint8_t>(index);
    } else if (index < colors->ColorCount) {
      const GifColorType& c = colors->Colors[index];
      rgb[0] = c.Red, rgb[1] = c.Green, rgb[2] = c.Blue;
    } else {
      rgb[0] = rgb[1] = rgb[2] = 0;
    }
  };
  DecodedImage out;
  out.image = BlankImage(header.width, header.height);
  uint8_t fill[3];
  color(transparent >= 0 ? transparent : 0, fill);
  for (size_t i = 0; i < out.image.rgb.size(); i += 3) std::memcpy(&out.image.rgb[i], fill, 3);
  for (size_t y = 0; y < fh; ++y) {
    uint8_t* row = out.image.Pixel(static_cast<uint32_t>(frame.Left), static_cast<uint32_t>(frame.Top + y));
    for (size_t x = 0; x < fw; ++x) color(indices[y * fw + x], row + x * 3);
  }
  return out;
}

}  // namespace shoal::image
