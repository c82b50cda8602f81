// A peer program a benchmark runs beside Shoal (PyTorch, ONNX Runtime, PIL):
// its figures are the JSON object on the last line of its stdout.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace shoal::bench {

inline nlohmann::json RunPeer(const std::string& cmd) {
  std::fprintf(stderr, "  $ %s\n", cmd.c_str());
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string last, line;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) {
    line += buf;
    if (line.ends_with('\n')) {
      if (line.size() > 1) last = line;
      line.clear();
    }
  }
  if (!line.empty()) last = line;
  std::fprintf(stderr, "  %s", last.c_str());  // the peer's figures and thread setting
  if (pclose(p) != 0) {
    std::fprintf(stderr, "  peer failed: %s\n", cmd.c_str());
    return {};
  }
  return nlohmann::json::parse(last, nullptr, false);
}

}  // namespace shoal::bench
