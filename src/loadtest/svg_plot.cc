#include "loadtest/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "common/str_printf.h"

namespace shoal::loadtest {
namespace {

constexpr double kWidth = 820, kHeight = 500;
constexpr double kLeft = 90, kRight = 90, kTop = 70, kBottom = 70;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr const char* kThroughputColour = "#1f77b4";
constexpr const char* kP50Colour = "#2ca02c";
constexpr const char* kP99Colour = "#d62728";


std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

double Finite(double v) { return std::isfinite(v) ? v : 0; }

// A round step (1, 2 or 5 times a power of ten) near range / ticks.
double NiceStep(double range, int ticks) {
  const double raw = range / ticks;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// A linear axis from 0 to a round ceiling above `max`.
struct LinearAxis {
  double max = 1, step = 0.2;
  explicit LinearAxis(double data_max) {
    if (!(data_max > 0) || !std::isfinite(data_max)) data_max = 1;
    step = NiceStep(data_max, 5);
    max = std::ceil(data_max / step - 1e-9) * step;
    if (max <= 0) max = step;
  }
  double Fraction(double v) const { return std::clamp(Finite(v) / max, 0.0, 1.0); }
};

// The offered-load axis: log2 when the levels span a factor of 8 or more.
struct OfferedAxis {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<double> ticks;

  explicit OfferedAxis(const std::vector<LevelResult>& levels) {
    double mn = INFINITY, mx = 0;
    for (const auto& l : levels) {
      if (!std::isfinite(l.offered)) continue;
      mn = std::min(mn, l.offered);
      mx = std::max(mx, l.offered);
    }
    if (!(mx > 0)) mx = 1;
    if (!std::isfinite(mn) || mn <= 0) mn = 0;
    log = mn > 0 && mx / mn >= 8;
    if (log) {
      lo = std::floor(std::log2(mn));
      hi = std::ceil(std::log2(mx));
      if (hi <= lo) hi = lo + 1;
      const int every = static_cast<int>(std::ceil((hi - lo) / 10));
      for (double e = lo; e <= hi + 1e-9; e += every) ticks.push_back(std::exp2(e));
    } else {
      const LinearAxis axis(mx);
      lo = 0;
      hi = axis.max;
      for (double t = 0; t <= hi + axis.step / 2; t += axis.step) ticks.push_back(t);
    }
  }

  double X(double v) const {
    double f = 0;
    if (log) {
      f = v > 0 ? (std::log2(v) - lo) / (hi - lo) : 0;
    } else {
      f = (Finite(v) - lo) / (hi - lo);
    }
    return kLeft + std::clamp(Finite(f), 0.0, 1.0) * kPlotW;
  }
};

double Y(double fraction) { return kTop + (1 - fraction) * kPlotH; }

std::string Label(double v) {
  if (std::fabs(v) >= 1e6) return StrPrintf("%.3gM", v / 1e6);
  if (std::fabs(v) >= 1e4) return StrPrintf("%.3gk", v / 1e3);
  return StrPrintf("%g", std::round(v * 1000) / 1000);
}

// A line through the points (dashed when `dash`), with a dot on each.
std::string Series(const std::vector<std::pair<double, double>>& points, const char* colour,
                   bool dash) {
  if (points.empty()) return "";
  std::string path;
  for (const auto& [x, y] : points) path += StrPrintf("%s%.1f,%.1f", path.empty() ? "" : " ", x, y);
  std::string out =
      StrPrintf("  <polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n",
             colour, dash ? " stroke-dasharray=\"6 4\"" : "", path.c_str());
  for (const auto& [x, y] : points)
    out += StrPrintf("  <circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x, y, colour);
  return out;
}

}  // namespace

std::string SweepSvg(const SweepReport& report, const std::string& title) {
  const auto& levels = report.levels;
  const bool closed = report.loop == LoopKind::kClosed;
  double max_throughput = 0, max_latency = 0;
  for (const auto& l : levels) {
    max_throughput = std::max(max_throughput, Finite(l.throughput_rps));
    if (l.ok) max_latency = std::max({max_latency, Finite(l.p50_ms), Finite(l.p99_ms)});
  }
  const OfferedAxis x(levels);
  const LinearAxis left(max_throughput), right(max_latency);

  std::string svg = StrPrintf(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
      "%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight, kWidth, kHeight);
  svg += StrPrintf("  <rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", kWidth,
                kHeight);
  svg += "  <title>" + Escape(title) + "</title>\n";
  svg += StrPrintf("  <text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
                kWidth / 2, Escape(title).c_str());

  // Grid and ticks.
  for (double t = 0; t <= left.max + left.step / 2; t += left.step) {
    const double y = Y(left.Fraction(t));
    svg += StrPrintf("  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                  kLeft, y, kLeft + kPlotW, y);
    svg += StrPrintf("  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">%s</text>\n",
                  kLeft - 6, y + 4, kThroughputColour, Label(t).c_str());
  }
  for (double t = 0; t <= right.max + right.step / 2; t += right.step) {
    const double y = Y(right.Fraction(t));
    svg += StrPrintf("  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                  kLeft + kPlotW, y, kLeft + kPlotW + 4, y);
    svg += StrPrintf("  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" fill=\"%s\">%s</text>\n",
                  kLeft + kPlotW + 7, y + 4, kP99Colour, Label(t).c_str());
  }
  for (double t : x.ticks) {
    const double px = x.X(t);
    svg += StrPrintf("  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                  px, kTop + kPlotH, px, kTop + kPlotH + 5);
    svg += StrPrintf("  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px,
                  kTop + kPlotH + 19, Label(t).c_str());
  }
  // Axes and their labels.
  svg += StrPrintf(
      "  <rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      kLeft, kTop, kPlotW, kPlotH);
  svg += StrPrintf(
      "  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", kLeft + kPlotW / 2,
      kHeight - 22,
      closed ? "offered load: concurrency (connections)"
             : (x.log ? "offered load (requests/s, log scale)" : "offered load (requests/s)"));
  svg += StrPrintf(
      "  <text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" "
      "fill=\"%s\">throughput "
      "(requests/s)</text>\n",
      24.0, kTop + kPlotH / 2, kThroughputColour);
  svg += StrPrintf(
      "  <text transform=\"translate(%.1f %.1f) rotate(90)\" text-anchor=\"middle\" "
      "fill=\"%s\">latency "
      "(ms)</text>\n",
      kWidth - 24, kTop + kPlotH / 2, kP99Colour);

  // The series.
  std::vector<std::pair<double, double>> throughput, p50, p99;
  for (const auto& l : levels) {
    if (!std::isfinite(l.offered)) continue;
    throughput.emplace_back(x.X(l.offered), Y(left.Fraction(l.throughput_rps)));
    if (l.ok) {
      p50.emplace_back(x.X(l.offered), Y(right.Fraction(l.p50_ms)));
      p99.emplace_back(x.X(l.offered), Y(right.Fraction(l.p99_ms)));
    }
  }
  svg += Series(p50, kP50Colour, true);
  svg += Series(p99, kP99Colour, true);
  svg += Series(throughput, kThroughputColour, false);

  // The knee.
  const Knee& k = report.knee;
  if (k.found && k.index < levels.size()) {
    const double px = x.X(levels[k.index].offered);
    const double py = Y(left.Fraction(levels[k.index].throughput_rps));
    svg += "  <g id=\"knee\">\n";
    svg += StrPrintf(
        "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
        "stroke-dasharray=\"3 3\"/>\n",
        px, kTop, px, kTop + kPlotH);
    svg += StrPrintf(
        "    <circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"black\" "
        "stroke-width=\"2\"/>\n",
        px, py);
    svg += StrPrintf(
        "    <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-weight=\"bold\">knee: %s</text>\n",
        px + (px > kLeft + kPlotW * 0.7 ? -6 : 6), kTop + 14,
        px > kLeft + kPlotW * 0.7 ? "end" : "start",
        Escape(Label(levels[k.index].offered) + (closed ? " conn, " : " req/s, ") +
               Label(std::round(levels[k.index].throughput_rps)) + " req/s")
            .c_str());
    svg += "  </g>\n";
  } else {
    svg += StrPrintf("  <text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%s</text>\n", kLeft + 8, kTop + 14,
                  levels.empty() ? "no levels" : "no knee found: throughput still rising");
  }

  // Legend.
  const double ly = 46;
  const struct {
    const char* name;
    const char* colour;
    bool dash;
  } legend[] = {{"throughput", kThroughputColour, false},
                {"p50 latency", kP50Colour, true},
                {"p99 latency", kP99Colour, true}};
  double lx = kLeft;
  for (const auto& e : legend) {
    svg += StrPrintf(
        "  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
        "stroke-width=\"2\"%s/>\n",
        lx, ly, lx + 24, ly, e.colour, e.dash ? " stroke-dasharray=\"6 4\"" : "");
    svg += StrPrintf("  <text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 30, ly + 4, e.name);
    lx += 130;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace shoal::loadtest
