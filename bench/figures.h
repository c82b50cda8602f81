// What the system benchmarks share: the median of repeated measurements, and
// the flat JSON object of figures each writes to docs/bench/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace shoal::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

// {"key": number, ...}, keys in order; prints where it went.
inline void WriteFigures(const std::string& path, const std::map<std::string, double>& figures) {
  if (std::filesystem::path(path).has_parent_path()) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  }
  std::ofstream out(path);
  out << "{";
  bool first = true;
  for (const auto& [k, v] : figures) {
    char num[64];
    std::snprintf(num, sizeof(num), "%.6g", v);
    out << (first ? "" : ",") << "\n  \"" << k << "\": " << num;
    first = false;
  }
  out << "\n}\n";
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace shoal::bench
