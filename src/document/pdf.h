// PdfDocument: a PDF's pages as images and as text, through poppler's C++
// API (Debian's libpoppler-cpp), for document models (OCR, page
// embedders): each page rendered to RGB at a resolution the caller picks,
// and the text layer a born-digital PDF carries, word by word with boxes.
//
// Bounds, checked before work is done: the file's bytes; the pages a call
// may take (a 10,000-page PDF opens, and a caller picks pages from it with
// a range, but asking for more than max_pages is refused); a page's pixels
// at the asked resolution (a page may declare itself 100,000 points wide).
// A PDF that needs a password to open is refused; one encrypted only
// against editing (an empty user password) is read, as every viewer reads
// it. A file poppler cannot parse is INVALID_INPUT.
//
// Threading: one document is used by one thread at a time (poppler's
// document is not thread-safe); different documents may be used at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "document/text_lines.h"
#include "image/image.h"

namespace poppler {
class document;
}

namespace shoal::document {

struct PdfLimits {
  size_t max_bytes = 64u << 20;
  int max_pages = 1000;               // pages one call may take
  uint64_t max_page_pixels = 40'000'000;  // a rendered page (A4 at 600 dpi is 34.8 million)
};

class PdfDocument {
 public:
  static Result<std::unique_ptr<PdfDocument>> Open(std::string_view bytes, const PdfLimits& limits = {});
  ~PdfDocument();

  int page_count() const { return pages_; }

  // The 0-based pages a range names: "" (all of them), or 1-based pages and
  // spans separated by commas ("1-3,7"), in the order given. INVALID_INPUT
  // for a malformed range, a page past the end, or more than max_pages.
  Result<std::vector<int>> Select(std::string_view range) const;

  // The page drawn on white at `dpi` (the page's own rotation applied).
  Result<image::Image> Render(int page, double dpi) const;

  // The page's text layer, word by word in reading order (empty for a
  // scanned page: that is what OCR is for).
  Result<std::vector<PdfWord>> Words(int page) const;

  // The page's text layer as lines (text_lines.h), in reading order.
  Result<std::vector<PdfLine>> Lines(int page) const;

  // The page's size in points, as rendered (rotation applied).
  Result<std::pair<double, double>> PageSize(int page) const;

 private:
  PdfDocument() = default;

  std::string bytes_;  // poppler reads from this copy for the document's life
  std::unique_ptr<poppler::document> doc_;
  int pages_ = 0;
  PdfLimits limits_;
};

}  // namespace shoal::document
