// What the system benchmarks share: the median of repeated measurements, the
// flat JSON object of figures each writes to docs/bench/, the generated
// bench models, and waiting for a process they started to listen.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "wire/msgpack_writer.h"

namespace shoal::bench {

// scripts/make-test-models --bench into `models_dir` (default:
// <source>/build-models), or only the models named in `only` ("a,b");
// idempotent, so only the first run waits. Returns the directory, or ""
// when the script failed.
inline std::string GenerateBenchModels(const std::string& source_dir, const std::string& models_dir,
                                       const char* who, const std::string& only = "") {
  const std::string dir = models_dir.empty() ? source_dir + "/build-models" : models_dir;
  std::fprintf(stderr, "%s: generating the bench models in %s (once)\n", who, dir.c_str());
  const std::string which = only.empty() ? " --bench" : " --only " + only;
  if (std::system((source_dir + "/scripts/make-test-models " + dir + which + " >&2").c_str()) != 0) return "";
  return dir;
}

// Whether something accepts connections on `port` within 30 s.
inline bool WaitAccepting(int port) {
  for (int i = 0; i < 300; ++i) {
    if (PortAcceptsConnections(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// A native /v1/encode body (MessagePack) of one item: {"items": [{"text": text}]}.
inline std::string OneItemBody(std::string_view text) {
  std::string body;
  wire::MsgpackWriter w(&body);
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(1);
  w.MapHeader(1);
  w.Str("text");
  w.Str(text);
  return body;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

// Median seconds per call of `fn` after one warm-up, over `seconds` (at
// least 3 calls).
template <class Fn>
double TimeIt(Fn&& fn, double seconds) {
  fn();
  std::vector<double> t;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (t.size() < 3 || std::chrono::steady_clock::now() < end) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(t);
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

// Reads a flat {"key": number} file WriteFigures wrote; empty if absent.
inline std::map<std::string, double> ReadFigures(const std::string& path) {
  std::map<std::string, double> figures;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t q = text.find('"'); q != std::string::npos; q = text.find('"', q)) {
    const size_t end = text.find('"', q + 1);
    const size_t colon = text.find(':', end);
    if (end == std::string::npos || colon == std::string::npos) break;
    figures[text.substr(q + 1, end - q - 1)] = std::strtod(text.c_str() + colon + 1, nullptr);
    q = text.find_first_of(",}", colon);
  }
  return figures;
}

// WriteFigures for a file several tools share (docs/bench/overload-chaos.json):
// `figures` replace their keys, the others stay.
inline void MergeFigures(const std::string& path, const std::map<std::string, double>& figures) {
  auto all = ReadFigures(path);
  for (const auto& [k, v] : figures) all[k] = v;
  WriteFigures(path, all);
}

}  // namespace shoal::bench
