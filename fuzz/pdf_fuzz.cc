// PDFs (document/pdf.h), through PdfDocument::Open: any bytes in, either
// INVALID_INPUT or a document whose first page renders (at the lowest
// resolution, small page bound) and whose text layer reads as lines. poppler itself
// is not instrumented; a crash or a leak inside it still ends the run.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "document/pdf.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::document;
  PdfLimits limits;
  limits.max_pages = 4;
  limits.max_page_pixels = 1 << 18;
  auto doc = PdfDocument::Open(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!doc.ok()) {
    FUZZ_CHECK(doc.status().code() == shoal::Code::kInvalidInput);
    return 0;
  }
  FUZZ_CHECK((*doc)->page_count() > 0);
  auto img = (*doc)->Render(0, 18);
  if (img.ok()) FUZZ_CHECK(img->rgb.size() == size_t{img->width} * img->height * 3);
  (void)(*doc)->Lines(0);
  (void)(*doc)->Select("1-2");
  return 0;
}
