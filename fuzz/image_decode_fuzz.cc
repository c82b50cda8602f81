// Images (image/decode.h), through DecodeImage with small limits: any bytes
// in, either INVALID_INPUT or an image whose pixels are all there; then a
// resize of it (image/resample.h), which must read only inside it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "image/decode.h"
#include "image/resample.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::image;
  ImageLimits limits;
  limits.max_pixels = 1 << 20;  // libFuzzer's memory limit is not the point
  auto img = DecodeImage(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!img.ok()) {
    FUZZ_CHECK(img.status().code() == shoal::Code::kInvalidInput);
    return 0;
  }
  FUZZ_CHECK(img->width > 0 && img->height > 0);
  FUZZ_CHECK(uint64_t{img->width} * img->height <= limits.max_pixels);
  FUZZ_CHECK(img->rgb.size() == size_t{img->width} * img->height * 3);
  const Image small = Resize(*img, 5, 3, static_cast<Resample>(size % 6));
  FUZZ_CHECK(small.rgb.size() == 5 * 3 * 3);
  return 0;
}
