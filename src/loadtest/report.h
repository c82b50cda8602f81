// A sweep's report as JSON (what `shoal bench --out` writes and `shoal tune`
// can read back) and as the table `shoal bench` prints.
//
// JSON: {"tool": "shoal bench", "loop": "closed"|"open", "options": {...as
// given by the caller}, "tokens_estimated": bool, "levels": [{"offered",
// "throughput_rps", "tokens_per_s", "output_tokens_per_s", "tokens_estimated",
// "p50_ms", "p95_ms", "p99_ms" (null without ok answers), "ok", "errors",
// "error_fraction", "status_counts": {"200": n, "0": n, ...}}], "knee":
// {"found", "index", "offered", "throughput_rps", "tokens_per_s", "p50_ms",
// "p95_ms", "p99_ms", "reason"}}. docs/bench-tool.md describes the fields.
//
// Threading: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loadtest/sweep.h"

namespace shoal::loadtest {

nlohmann::json LevelJson(const LevelResult& level);
nlohmann::json SweepJson(const SweepReport& report, const nlohmann::json& options);

// "closed" or "open".
const char* LoopName(LoopKind loop);

// Offered, throughput, tokens/s, p50/p95/p99, errors: one row a level, the
// knee's row marked, and a line saying where the knee is (or that it was not
// found) and why.
std::string SweepTable(const SweepReport& report);

}  // namespace shoal::loadtest
