// What `shoal tune` makes of a TuneResult: the tuned entry for the profile
// (with its evidence), the profile rewritten, the summary table, and the
// JSON of every candidate's figures.
//
// Evidence beside the entry (model_spec.h has the section's format):
//   knee_rps, default_knee_rps, tuned_over_default   knee throughput of the
//       tuned and the untuned configuration, measured back to back at the
//       end, and their ratio
//   held_rps, p99_ms_at_knee, knee_load, latency_target_ms, loop
//   candidates, pruned, minutes, date (UTC), hardware, shoal (version)
//
// Threading: pure functions, but WriteTunedProfile writes a file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "tune/tuner.h"

namespace shoal::tune {

// "0.1.0 (git abc1234)": this build's version, for evidence.
std::string ShoalVersion();

// The entry for the profile: batching, `<runtime>: {precision}` when the
// runtime has one, threads, evidence.
nlohmann::ordered_json TunedEntry(const TuneResult& result, const std::string& runtime);

// Rewrites the `tuned:` block of the profile at `path` (profile_writer.h)
// with the entry for result.hardware_class, checks that the new file parses
// and that the entry applies as measured, and replaces the file (a
// temporary beside it, renamed). Returns the new text.
Result<std::string> WriteTunedProfile(const std::string& path, const TuneResult& result,
                                      const std::string& runtime);

// The candidates, a line each, and the outcome.
std::string SummaryTable(const TuneResult& result);

// Every candidate's figures (each level of each), the options, the outcome.
nlohmann::ordered_json ResultJson(const TuneResult& result);

}  // namespace shoal::tune
