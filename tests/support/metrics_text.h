// Reading one series out of a Prometheus text page (a gateway's GET /metrics,
// Worker::RenderMetrics()), for tests that wait on what a process counts.
#pragma once

#include <optional>
#include <sstream>
#include <string>

namespace shoal::testing {

// The value of `series`, written exactly as the page writes it: the name and
// its labels in order, e.g. shoal_worker_items_total{model="m",outcome="expired"}.
// Nothing when the page has no such line (a counter not yet counted).
inline std::optional<double> MetricValue(const std::string& page, const std::string& series) {
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace shoal::testing
