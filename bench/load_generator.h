// An HTTP load generator on keep-alive connections, one thread, two modes:
//   closed loop  each connection sends its next request when the last one is
//                answered (finds the maximum throughput);
//   open loop    requests are due at a fixed rate, spread over the
//                connections; latency counts from when a request was due, so
//                a stall is charged to every request it delays (no
//                coordinated omission).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace shoal::bench {

// One kind of request in a mix, drawn with probability weight / total.
struct MixEntry {
  std::string path;
  std::string content_type;
  std::string body;
  double weight = 1;
};

struct LoadSpec {
  int port = 0;
  std::string path;
  std::string content_type;
  std::string body;
  // When not empty, each request is drawn from the mix (seeded, so runs
  // repeat) instead of path/content_type/body.
  std::vector<MixEntry> mix;
  uint64_t seed = 1;
  int connections = 64;
  double rate = 0;  // requests/s; 0: closed loop
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds duration{5000};
};

struct LoadResult {
  double requests_per_s = 0;
  uint64_t ok = 0;
  uint64_t errors = 0;
  std::vector<double> latencies_ms;  // of measured, successful requests
  std::vector<uint32_t> entries;     // the mix entry of each (as latencies_ms)
  std::vector<uint8_t> cold_starts;  // its X-Shoal-Cold-Start was 1 (as latencies_ms)

  double Percentile(double p) const;
};

LoadResult RunLoad(const LoadSpec& spec);

}  // namespace shoal::bench
