// The sweep's SVG figure (loadtest/svg_plot.h): well-formed XML, the knee
// marked, nothing non-finite written.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "loadtest/svg_plot.h"

namespace shoal::loadtest {
namespace {

// A small well-formedness check: one root, every tag closed in order,
// attributes quoted, no stray '<' or '&'. Returns "" or what is wrong.
std::string CheckXml(const std::string& xml) {
  std::vector<std::string> open;
  size_t roots = 0;
  size_t at = 0;
  if (xml.rfind("<?xml", 0) == 0) at = xml.find("?>") + 2;
  while (at < xml.size()) {
    const size_t lt = xml.find('<', at);
    // Text between tags: entities only as &name;
    const std::string text = xml.substr(at, (lt == std::string::npos ? xml.size() : lt) - at);
    for (size_t amp = text.find('&'); amp != std::string::npos; amp = text.find('&', amp + 1)) {
      const size_t semi = text.find(';', amp);
      if (semi == std::string::npos || semi - amp > 6) return "bad entity in text: " + text;
    }
    if (lt == std::string::npos) break;
    if (open.empty() && roots == 1) return "content after the root element";
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unclosed tag";
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else {
      const bool self_closing = tag.back() == '/';
      if (self_closing) tag.pop_back();
      const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
      if (name.empty()) return "empty tag name";
      // Attributes: name="value" pairs.
      size_t p = name.size();
      while (p < tag.size()) {
        p = tag.find_first_not_of(" \n\t", p);
        if (p == std::string::npos) break;
        const size_t eq = tag.find('=', p);
        if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
          return "unquoted attribute: " + tag;
        const size_t close = tag.find('"', eq + 2);
        if (close == std::string::npos) return "unterminated attribute: " + tag;
        p = close + 1;
      }
      if (open.empty()) ++roots;
      if (!self_closing) open.push_back(name);
    }
    at = gt + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

SweepReport Report(bool found) {
  SweepReport r;
  r.loop = LoopKind::kClosed;
  const double offered[] = {1, 2, 4, 8, 16, 32};
  const double throughput[] = {100, 200, 300, 310, 312, 313};
  for (size_t i = 0; i < 6; ++i) {
    LevelResult l;
    l.offered = offered[i];
    l.throughput_rps = throughput[i];
    l.p50_ms = 5 * (i + 1);
    l.p95_ms = 8 * (i + 1);
    l.p99_ms = 10 * (i + 1);
    l.ok = 100;
    r.levels.push_back(l);
  }
  r.knee.found = found;
  r.knee.index = found ? 2 : 5;
  r.knee.at = r.levels[r.knee.index];
  return r;
}

TEST(SweepSvg, WellFormedWithTheKneeMarked) {
  const std::string svg = SweepSvg(Report(true), "encode <test> & more");
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("id=\"knee\""), std::string::npos);
  EXPECT_NE(svg.find("knee: 4 conn"), std::string::npos) << svg;
  EXPECT_NE(svg.find("throughput (requests/s)"), std::string::npos);
  EXPECT_NE(svg.find("latency (ms)"), std::string::npos);
  EXPECT_NE(svg.find("encode &lt;test&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SweepSvg, NoKneeNoMarker) {
  const std::string svg = SweepSvg(Report(false), "t");
  EXPECT_EQ(CheckXml(svg), "") << svg;
  EXPECT_EQ(svg.find("id=\"knee\""), std::string::npos);
  EXPECT_NE(svg.find("no knee found"), std::string::npos);
}

TEST(SweepSvg, DegenerateInputsWriteNoNaN) {
  // No levels; levels without answers; non-finite values; open loop on a
  // linear axis.
  SweepReport empty;
  SweepReport odd;
  odd.loop = LoopKind::kOpen;
  for (double offered : {10.0, 20.0, 30.0}) {
    LevelResult l;
    l.offered = offered;
    l.throughput_rps = offered == 20 ? NAN : 0;
    l.p99_ms = INFINITY;
    l.ok = offered == 30 ? 1 : 0;
    odd.levels.push_back(l);
  }
  odd.knee.found = true;
  odd.knee.index = 0;
  for (const SweepReport& r : {empty, odd}) {
    const std::string svg = SweepSvg(r, "degenerate");
    EXPECT_EQ(CheckXml(svg), "") << svg;
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  }
}

TEST(SweepSvg, TheCheckerCatchesBrokenXml) {
  EXPECT_NE(CheckXml("<svg><g></svg>"), "");
  EXPECT_NE(CheckXml("<svg a=b></svg>"), "");
  EXPECT_NE(CheckXml("<svg>a & b</svg>"), "");
  EXPECT_EQ(CheckXml("<svg><g a=\"1\"/></svg>"), "");
}

}  // namespace
}  // namespace shoal::loadtest
