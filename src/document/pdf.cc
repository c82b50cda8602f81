#include "document/pdf.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <charconv>
#include <cmath>
#include <mutex>

namespace shoal::document {
namespace {

// poppler writes its parse complaints to stderr; a served PDF's problems are
// reported as the request's error instead.
void SilencePoppler() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function([](const std::string&, void*) {}, nullptr); });
}

std::string PageName(int page) { return "page " + std::to_string(page + 1); }

std::string Utf8(const poppler::ustring& s) {
  const poppler::byte_array bytes = s.to_utf8();
  return std::string(bytes.begin(), bytes.end());
}

Result<int> PageNumber(std::string_view s, int pages) {
  int n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return InvalidInput("pages: '" + std::string(s) + "' is not a page number");
  }
  if (n < 1 || n > pages) {
    return InvalidInput("pages: page " + std::string(s) + " is not in the document (pages 1-" + std::to_string(pages) +
                        ")");
  }
  return n - 1;
}

}  // namespace

PdfDocument::~PdfDocument() = default;

Result<std::unique_ptr<PdfDocument>> PdfDocument::Open(std::string_view bytes, const PdfLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    return InvalidInput("PDF is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                        std::to_string(limits.max_bytes));
  }
  if (bytes.substr(0, 5) != "%PDF-") return InvalidInput("not a PDF: it does not start with %PDF-");
  SilencePoppler();
  std::unique_ptr<PdfDocument> d(new PdfDocument());
  d->bytes_.assign(bytes);
  d->limits_ = limits;
  d->doc_.reset(poppler::document::load_from_raw_data(d->bytes_.data(), static_cast<int>(d->bytes_.size())));
  if (!d->doc_) return InvalidInput("PDF cannot be read: its structure is corrupt or it is truncated");
  if (d->doc_->is_locked()) return InvalidInput("PDF is encrypted with a password; send it decrypted");
  d->pages_ = d->doc_->pages();
  if (d->pages_ < 1) return InvalidInput("PDF has no pages");
  return d;
}

Result<std::vector<int>> PdfDocument::Select(std::string_view range) const {
  std::vector<int> out;
  if (range.empty()) {
    if (pages_ > limits_.max_pages) {
      return InvalidInput("PDF has " + std::to_string(pages_) + " pages; the limit is " +
                          std::to_string(limits_.max_pages) + " a request (choose them with pages, e.g. \"1-10\")");
    }
    for (int p = 0; p < pages_; ++p) out.push_back(p);
    return out;
  }
  while (!range.empty()) {
    const size_t comma = range.find(',');
    const std::string_view part = range.substr(0, comma);
    range = comma == std::string_view::npos ? std::string_view() : range.substr(comma + 1);
    const size_t dash = part.find('-');
    SHOAL_ASSIGN_OR_RETURN(const int first, PageNumber(part.substr(0, dash), pages_));
    int last = first;
    if (dash != std::string_view::npos) {
      SHOAL_ASSIGN_OR_RETURN(last, PageNumber(part.substr(dash + 1), pages_));
    }
    if (last < first) return InvalidInput("pages: '" + std::string(part) + "' runs backwards");
    if (static_cast<int64_t>(out.size()) + (last - first + 1) > limits_.max_pages) {
      return InvalidInput("pages: more than " + std::to_string(limits_.max_pages) + " pages asked for");
    }
    for (int p = first; p <= last; ++p) out.push_back(p);
  }
  return out;
}

Result<std::pair<double, double>> PdfDocument::PageSize(int page) const {
  if (page < 0 || page >= pages_) return InvalidInput(PageName(page) + " is not in the document");
  const std::unique_ptr<poppler::page> p(doc_->create_page(page));
  if (!p) return InvalidInput(PageName(page) + " cannot be read");
  const poppler::rectf box = p->page_rect(poppler::crop_box);
  const bool turned = p->orientation() == poppler::page::landscape || p->orientation() == poppler::page::seascape;
  return turned ? std::make_pair(box.height(), box.width()) : std::make_pair(box.width(), box.height());
}

Result<image::Image> PdfDocument::Render(int page, double dpi) const {
  if (!(dpi >= 18 && dpi <= 1200)) return InvalidInput("dpi " + std::to_string(dpi) + " is not from 18 to 1200");
  SHOAL_ASSIGN_OR_RETURN(const auto size, PageSize(page));
  const double pixels = std::ceil(size.first * dpi / 72) * std::ceil(size.second * dpi / 72);
  if (!(pixels <= static_cast<double>(limits_.max_page_pixels))) {
    return InvalidInput(PageName(page) + " is " + std::to_string(static_cast<int64_t>(size.first)) + " × " +
                        std::to_string(static_cast<int64_t>(size.second)) + " points: at " +
                        std::to_string(static_cast<int>(dpi)) + " dpi that is " +
                        std::to_string(static_cast<int64_t>(pixels)) + " pixels; the limit is " +
                        std::to_string(limits_.max_page_pixels));
  }
  const std::unique_ptr<poppler::page> p(doc_->create_page(page));
  if (!p) return InvalidInput(PageName(page) + " cannot be read");
  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_image_format(poppler::image::format_bgr24);
  const poppler::image drawn = renderer.render_page(p.get(), dpi, dpi);
  if (!drawn.is_valid() || drawn.width() < 1 || drawn.height() < 1) {
    return InvalidInput(PageName(page) + " cannot be rendered");
  }
  image::Image out = image::BlankImage(static_cast<uint32_t>(drawn.width()), static_cast<uint32_t>(drawn.height()));
  for (uint32_t y = 0; y < out.height; ++y) {
    const auto* src = reinterpret_cast<const uint8_t*>(drawn.const_data()) + static_cast<size_t>(y) * drawn.bytes_per_row();
    uint8_t* dst = out.Pixel(0, y);
    for (uint32_t x = 0; x < out.width; ++x, src += 3, dst += 3) dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
  }
  return out;
}

Result<std::vector<PdfWord>> PdfDocument::Words(int page) const {
  if (page < 0 || page >= pages_) return InvalidInput(PageName(page) + " is not in the document");
  const std::unique_ptr<poppler::page> p(doc_->create_page(page));
  if (!p) return InvalidInput(PageName(page) + " cannot be read");
  std::vector<PdfWord> words;
  for (const poppler::text_box& box : p->text_list()) {
    const poppler::rectf r = box.bbox();
    words.push_back({Utf8(box.text()), r.x(), r.y(), r.width(), r.height(), box.has_space_after(), box.rotation()});
  }
  return words;
}

Result<std::vector<PdfLine>> PdfDocument::Lines(int page) const {
  SHOAL_ASSIGN_OR_RETURN(const std::vector<PdfWord> words, Words(page));
  return GroupIntoLines(words);
}

}  // namespace shoal::document
