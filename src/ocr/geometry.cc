#include "ocr/geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shoal::ocr {
namespace {

double Cross(Point o, Point a, Point b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

double Distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); }

// The corners of a rectangle given as four points in any order, ordered as a Quad.
Quad Ordered(std::array<Point, 4> p) {
  std::sort(p.begin(), p.end(), [](Point a, Point b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  const auto [tl, bl] = p[0].y <= p[1].y ? std::pair{p[0], p[1]} : std::pair{p[1], p[0]};
  const auto [tr, br] = p[2].y <= p[3].y ? std::pair{p[2], p[3]} : std::pair{p[3], p[2]};
  return {tl, tr, br, bl};
}

}  // namespace

std::vector<Point> ConvexHull(std::vector<Point> points) {
  std::sort(points.begin(), points.end(), [](Point a, Point b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  points.erase(std::unique(points.begin(), points.end(), [](Point a, Point b) { return a.x == b.x && a.y == b.y; }),
               points.end());
  if (points.size() < 3) return points;
  // Andrew's monotone chain: the lower hull, then the upper.
  std::vector<Point> hull(2 * points.size());
  size_t k = 0;
  for (const Point& p : points) {
    while (k >= 2 && Cross(hull[k - 2], hull[k - 1], p) <= 0) --k;
    hull[k++] = p;
  }
  for (size_t i = points.size() - 1, lower = k + 1; i-- > 0;) {
    while (k >= lower && Cross(hull[k - 2], hull[k - 1], points[i]) <= 0) --k;
    hull[k++] = points[i];
  }
  hull.resize(k - 1);
  return hull;
}

Quad MinAreaRect(std::span<const Point> points) {
  const std::vector<Point> hull = ConvexHull({points.begin(), points.end()});
  if (hull.empty()) return {};
  if (hull.size() == 1) return {hull[0], hull[0], hull[0], hull[0]};
  if (hull.size() == 2) return Ordered({hull[0], hull[1], hull[1], hull[0]});
  // One side of the best rectangle lies on a hull edge: try each edge's
  // direction, the hull's extent along it and across it.
  double best = std::numeric_limits<double>::infinity();
  std::array<Point, 4> corners{};
  for (size_t i = 0; i < hull.size(); ++i) {
    const Point a = hull[i], b = hull[(i + 1) % hull.size()];
    const double len = Distance(a, b);
    if (len == 0) continue;
    const double ux = (b.x - a.x) / len, uy = (b.y - a.y) / len;  // along the edge
    double lo_u = 0, hi_u = 0, lo_v = 0, hi_v = 0;
    for (const Point& p : hull) {
      const double u = (p.x - a.x) * ux + (p.y - a.y) * uy, v = -(p.x - a.x) * uy + (p.y - a.y) * ux;
      lo_u = std::min(lo_u, u), hi_u = std::max(hi_u, u), lo_v = std::min(lo_v, v), hi_v = std::max(hi_v, v);
    }
    const double area = (hi_u - lo_u) * (hi_v - lo_v);
    if (area < best) {
      best = area;
      auto at = [&](double u, double v) { return Point{a.x + u * ux - v * uy, a.y + u * uy + v * ux}; };
      corners = {at(lo_u, lo_v), at(hi_u, lo_v), at(hi_u, hi_v), at(lo_u, hi_v)};
    }
  }
  return Ordered(corners);
}

double ShortSide(const Quad& q) { return std::min(Distance(q[0], q[1]), Distance(q[1], q[2])); }

double Area(const Quad& q) {
  double twice = 0;
  for (size_t i = 0; i < 4; ++i) twice += q[i].x * q[(i + 1) % 4].y - q[(i + 1) % 4].x * q[i].y;
  return std::abs(twice) / 2;
}

double Perimeter(const Quad& q) {
  double p = 0;
  for (size_t i = 0; i < 4; ++i) p += Distance(q[i], q[(i + 1) % 4]);
  return p;
}

Quad Grow(const Quad& rect, double distance) {
  // Each corner moves outward along both of its sides' directions.
  Quad out = rect;
  for (size_t i = 0; i < 4; ++i) {
    const Point prev = rect[(i + 3) % 4], here = rect[i], next = rect[(i + 1) % 4];
    const double a = Distance(prev, here), b = Distance(next, here);
    double dx = 0, dy = 0;
    if (a > 0) dx += (here.x - prev.x) / a, dy += (here.y - prev.y) / a;
    if (b > 0) dx += (here.x - next.x) / b, dy += (here.y - next.y) / b;
    out[i] = {here.x + dx * distance, here.y + dy * distance};
  }
  return out;
}

bool Inside(std::span<const Point> poly, Point p) {
  bool inside = false;
  for (size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++) {
    const Point a = poly[i], b = poly[j];
    // On the edge: inside.
    if (std::abs(Cross(a, b, p)) < 1e-9 && p.x >= std::min(a.x, b.x) - 1e-9 && p.x <= std::max(a.x, b.x) + 1e-9 &&
        p.y >= std::min(a.y, b.y) - 1e-9 && p.y <= std::max(a.y, b.y) + 1e-9) {
      return true;
    }
    if ((a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x) inside = !inside;
  }
  return inside;
}

}  // namespace shoal::ocr
