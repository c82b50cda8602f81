#include "generation_load.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/clock.h"
#include "support/http_client.h"

namespace shoal::bench {

using nlohmann::json;

// One streamed completion: appends its TTFT and gaps; returns tokens seen
// (from the usage chunk), or -1 on an error.
int StreamOne(int port, const std::string& model, const std::string& prompt, int new_tokens, Round* r,
              std::mutex* mu, const std::string& response_format) {
  testing::StreamConnection c(port, 600000);
  json body = {{"model", model},      {"max_tokens", new_tokens}, {"temperature", 0},
               {"ignore_eos", true},  {"stream", true},           {"stream_options", {{"include_usage", true}}}};
  const bool chat = !response_format.empty();
  if (chat) {
    body["messages"] = {{{"role", "user"}, {"content", prompt}}};
    body["response_format"] = json::parse(response_format);
  } else {
    body["prompt"] = prompt;
  }
  const auto sent = SteadyClock::now();
  if (Status s = c.PostJson(chat ? "/v1/chat/completions" : "/v1/completions", body.dump()); !s.ok()) {
    std::fprintf(stderr, "bench: send: %s\n", s.ToString().c_str());
    return -1;
  }
  auto head = c.ReadHead();
  if (!head.ok() || head->status != 200) {
    std::fprintf(stderr, "bench: %s\n", head.ok() ? head->body.c_str() : head.status().ToString().c_str());
    return -1;
  }
  std::vector<double> gaps;
  double ttft = -1;
  auto last = sent;
  int tokens = -1, prompt_tokens = 0;
  for (;;) {
    auto e = c.NextEvent();
    if (!e.ok()) break;
    if (*e == "[DONE]") break;
    const json j = json::parse(*e, nullptr, false);
    if (!j.is_object()) return -1;
    if (j.contains("usage") && j["usage"].is_object()) {
      tokens = j["usage"]["completion_tokens"];
      prompt_tokens = j["usage"]["prompt_tokens"];
    }
    if (!j.contains("choices") || j["choices"].empty()) continue;
    const auto now = SteadyClock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    if (ttft < 0) {
      ttft = std::chrono::duration<double, std::milli>(now - sent).count();
    } else {
      gaps.push_back(ms);
    }
    last = now;
  }
  std::lock_guard lock(*mu);
  if (ttft >= 0) r->ttft_ms.push_back(ttft);
  r->itl_ms.insert(r->itl_ms.end(), gaps.begin(), gaps.end());
  r->prompt_tokens = prompt_tokens;
  return tokens;
}

Round RunRound(int port, const std::string& model, const std::string& prompt, int concurrency, int requests,
               int new_tokens, const std::string& response_format) {
  Round r;
  r.concurrency = concurrency;
  std::mutex mu;
  std::atomic<int64_t> tokens{0};
  std::atomic<int> errors{0};
  const auto t0 = SteadyClock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < requests; ++i) {
        const int n = StreamOne(port, model, prompt, new_tokens, &r, &mu, response_format);
        if (n < 0) {
          errors.fetch_add(1);
        } else {
          tokens.fetch_add(n);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const double s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  r.seconds = s;
  r.tokens_per_s = tokens.load() / s;
  r.errors = errors.load();
  return r;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace shoal::bench
