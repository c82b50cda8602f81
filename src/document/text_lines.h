// A PDF page's text layer as lines: the words poppler reads, in its reading
// order, joined into the lines they are set in — what an OCR pipeline
// answers for a page that carries its text (runtime/ocr/ocr_model.h), and
// what `pdftotext -bbox-layout` calls lines (tests/unit/pdf_test.cc holds
// the grouping to it).
//
// A word continues the line before it when it runs in the same direction,
// lies across the line's band by at least half the smaller height, and
// starts no more than half its height behind the line's end and no more
// than 1.5 heights after it (poppler's own largest gap between words of a
// line is 1.5 font sizes: further is another column, or a table's next
// cell). Words are joined by a space where the PDF sets one or the gap is
// wider than a tenth of the height, else glued ("42" ",").
//
// Threading: pure functions.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace shoal::document {

// A word of the text layer: its text and its box in the page's points
// (1/72 inch, origin top left of the page as rendered).
struct PdfWord {
  std::string text;
  double x = 0, y = 0, width = 0, height = 0;
  bool space_after = false;  // the PDF sets a space after it
  int rotation = 0;          // its direction in quarter turns clockwise: 0 reads left to right
};

// A line of the text layer: its words joined, the box around them (points,
// as PdfWord's) and their direction.
struct PdfLine {
  std::string text;
  double x = 0, y = 0, width = 0, height = 0;
  int rotation = 0;
};

std::vector<PdfLine> GroupIntoLines(std::span<const PdfWord> words);

}  // namespace shoal::document
