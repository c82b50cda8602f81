// Streamed completions as a generation benchmark's clients send them: at a
// concurrency C, C clients each send `requests` streamed /v1/completions
// one after another (greedy, ignore_eos, `new_tokens` tokens). Aggregate
// output tokens/s is every generated token over the round's wall time;
// TTFT is measured at the client (sent → first token event), ITL between
// token events. With a `response_format` (its JSON), the clients send chat
// completions instead (the prompt as one user message) holding the output
// to it. Shared by bench/generation.cc, bench/llamacpp.cc and
// bench/upstream.cc.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace shoal::bench {

struct Round {
  int concurrency = 0;
  double tokens_per_s = 0;
  double seconds = 0;  // the round's wall time
  std::vector<double> ttft_ms, itl_ms;
  int errors = 0;
  int prompt_tokens = 0;
};

// One streamed completion: appends its TTFT and gaps to `r` (under `mu`);
// returns the tokens it generated (from the usage chunk), or -1 on an error.
int StreamOne(int port, const std::string& model, const std::string& prompt, int new_tokens, Round* r,
              std::mutex* mu, const std::string& response_format = "");

Round RunRound(int port, const std::string& model, const std::string& prompt, int concurrency, int requests,
               int new_tokens, const std::string& response_format = "");

// The p-quantile (0..1) of `v`; NAN when empty.
double Percentile(std::vector<double> v, double p);

}  // namespace shoal::bench
