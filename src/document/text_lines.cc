#include "document/text_lines.h"

#include <algorithm>

namespace shoal::document {
namespace {

// A box seen in its text's direction: along the line (increasing as it is
// read) and across it.
struct Extent {
  double along0, along1, across0, across1;
  double height() const { return across1 - across0; }
};

Extent Of(const PdfWord& word) {
  const double x = word.x, y = word.y, w = word.width, h = word.height;
  switch (word.rotation) {
    case 1:
      return {y, y + h, x, x + w};  // top to bottom
    case 2:
      return {-(x + w), -x, y, y + h};  // upside down
    case 3:
      return {-(y + h), -y, x, x + w};  // bottom to top
    default:
      return {x, x + w, y, y + h};
  }
}

// Whether `next` continues the line `line` ends as: its band and its place.
bool Continues(const Extent& line, const Extent& next) {
  const double size = std::max(next.height(), 1e-6);
  const double across = std::min(line.across1, next.across1) - std::max(line.across0, next.across0);
  const double gap = next.along0 - line.along1;
  return across >= 0.5 * std::min(line.height(), size) && gap >= -0.5 * size && gap <= 1.5 * size;
}

void Grow(PdfLine* line, const PdfWord& w) {
  const double x1 = std::max(line->x + line->width, w.x + w.width);
  const double y1 = std::max(line->y + line->height, w.y + w.height);
  line->x = std::min(line->x, w.x);
  line->y = std::min(line->y, w.y);
  line->width = x1 - line->x;
  line->height = y1 - line->y;
}

}  // namespace

std::vector<PdfLine> GroupIntoLines(std::span<const PdfWord> words) {
  std::vector<PdfLine> lines;
  const PdfWord* last = nullptr;  // the current line's last word
  Extent end{};                   // the current line's band, and where it ends
  for (const PdfWord& w : words) {
    if (w.text.empty()) continue;
    const Extent e = Of(w);
    if (last && w.rotation == last->rotation && Continues(end, e)) {
      PdfLine& line = lines.back();
      if (last->space_after || e.along0 - end.along1 > 0.1 * e.height()) line.text += ' ';
      line.text += w.text;
      Grow(&line, w);
      end = {end.along0, std::max(end.along1, e.along1), std::min(end.across0, e.across0),
             std::max(end.across1, e.across1)};
    } else {
      lines.push_back({w.text, w.x, w.y, w.width, w.height, w.rotation});
      end = e;
    }
    last = &w;
  }
  return lines;
}

}  // namespace shoal::document
