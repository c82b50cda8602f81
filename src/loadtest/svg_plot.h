// A sweep as a standalone SVG figure, written by hand (no plotting library):
// throughput against offered load on the left axis, p50 and p99 latency on
// the right, the knee marked (a dashed vertical line, a ring on its
// throughput point and the label "knee"; element id "knee"). The offered
// axis is logarithmic (base 2) when the levels span a factor of 8 or more.
// Levels without ok answers have no latency point; nothing non-finite is
// ever written.
//
// Threading: a pure function.
#pragma once

#include <string>

#include "loadtest/sweep.h"

namespace shoal::loadtest {

std::string SweepSvg(const SweepReport& report, const std::string& title);

}  // namespace shoal::loadtest
