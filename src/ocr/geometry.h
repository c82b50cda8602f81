// The plane geometry OCR's detection post-processing needs: convex hulls,
// minimum-area rectangles (rotating calipers), a rectangle grown on every
// side, and which pixels a polygon covers.
//
// Coordinates are pixels: x to the right, y down; a pixel's point is its
// centre's integer position. Pure functions, no state.
#pragma once

#include <array>
#include <span>
#include <vector>

namespace shoal::ocr {

struct Point {
  double x = 0, y = 0;
};

// A text line's box: four corners clockwise from the top-left (top-left,
// top-right, bottom-right, bottom-left), as PaddleOCR orders them.
using Quad = std::array<Point, 4>;

// The convex hull of `points`, counter-clockwise in y-down terms (no three
// collinear); fewer than three distinct points come back as they are.
std::vector<Point> ConvexHull(std::vector<Point> points);

// The smallest-area rectangle holding `points` (rotating calipers over the
// hull), its corners ordered as a Quad: sorted by x, the left two split by
// y into top-left and bottom-left, the right two into top-right and
// bottom-right (PaddleOCR's get_mini_boxes).
Quad MinAreaRect(std::span<const Point> points);

// Its sides' lengths: the shorter one (PaddleOCR's "sside").
double ShortSide(const Quad& q);
double Area(const Quad& q);
double Perimeter(const Quad& q);

// A rectangle grown by `distance` on every side (the offset polygon of a
// rectangle with round joins has exactly this bounding rectangle, which is
// what DB's unclip then takes).
Quad Grow(const Quad& rect, double distance);

// Whether the point lies inside the polygon (even-odd rule; a point on an
// edge counts as inside).
bool Inside(std::span<const Point> polygon, Point p);

}  // namespace shoal::ocr
