#include "chaos/load.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"

namespace shoal::chaos {
namespace {

// Whether `body` is Shoal's error document: {"error":{"code":"...",...}}.
bool IsShoalError(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("code") &&
         j["error"]["code"].is_string();
}

// Equal lengths, every value within `tolerance` (0: exactly equal).
bool Close(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) return false;
  }
  return true;
}

std::string Shorten(std::string s) {
  if (s.size() > 160) s = s.substr(0, 160) + "...";
  return s;
}

// A streamed completion's text, from its SSE events; the failure of a
// stream that errs or ends early.
Result<std::string> StreamedText(int port, int timeout_ms, const std::string& body,
                                 const std::map<std::string, std::string>& headers) {
  testing::StreamConnection c(port, timeout_ms);
  std::map<std::string, std::string> h = headers;
  h["Content-Type"] = "application/json";
  SHOAL_RETURN_IF_ERROR(c.Send("POST", "/v1/completions", body, h));
  auto head = c.ReadHead();
  if (!head.ok()) return head.status();
  if (head->status != 200) return Status(Code::kInternal, std::to_string(head->status) + " " + head->body);
  std::string text;
  for (;;) {
    auto e = c.NextEvent();
    if (!e.ok()) return Status(Code::kInternal, "the stream ended without [DONE]: " + e.status().ToString());
    if (*e == "[DONE]") return text;
    const auto j = nlohmann::json::parse(*e, nullptr, false);
    if (j.is_object() && j.contains("error")) return Status(Code::kInternal, "error event: " + *e);
    if (j.is_object() && j.contains("choices") && !j["choices"].empty() && j["choices"][0]["text"].is_string()) {
      text += j["choices"][0]["text"].get<std::string>();
    }
  }
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kCompleted: return "completed";
    case Outcome::kFailedExplicit: return "failed";
    case Outcome::kLost: return "lost";
  }
  return "?";
}

void LoadDriver::Start() {
  stop_ = false;
  for (int i = 0; i < options_.clients; ++i) threads_.emplace_back([this, i] { Client(i); });
}

void LoadDriver::Stop() {
  stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void LoadDriver::Client(int index) {
  const int port = options_.ports[static_cast<size_t>(index) % options_.ports.size()];
  const auto wait = options_.deadline + options_.margin;
  testing::HttpClient http(port, static_cast<int>(wait.count()));
  const std::map<std::string, std::string> headers = {
      {"X-Shoal-Timeout-Ms", std::to_string(options_.deadline.count())}};
  for (int64_t i = 0; !stop_; ++i) {
    // Unique words: every request's vector differs from every other's.
    const std::string text = options_.tag + " c" + std::to_string(index) + " r" + std::to_string(i);
    RequestRecord r;
    r.sent = Clock::now();
    ++sent_;
    if (options_.right_text) {
      const std::string prompt = options_.tag + " prompt " + std::to_string(i % 4);
      const nlohmann::json body = {{"model", options_.model}, {"prompt", prompt}, {"max_tokens", options_.new_tokens},
                                   {"temperature", 0}, {"ignore_eos", true}, {"stream", true}};
      auto text = StreamedText(port, static_cast<int>(wait.count()), body.dump(), headers);
      r.done = Clock::now();
      if (!text.ok()) {
        const bool timed_out = r.done - r.sent >= wait - std::chrono::milliseconds(200);
        r.outcome = timed_out ? Outcome::kLost : Outcome::kFailedExplicit;
        r.detail = Shorten(text.status().ToString());
      } else if (!options_.right_text(prompt, *text)) {
        r.outcome = Outcome::kLost;
        r.detail = "wrong text for '" + prompt + "': " + Shorten(*text);
      }
      Record(std::move(r));
      continue;
    }
    auto res = http.PostJson("/v1/embeddings",
                             R"({"model":")" + options_.model + R"(","input":")" + text + R"("})", headers);
    r.done = Clock::now();
    if (!res.ok()) {
      // The client's own view: refused, reset or closed is an explicit
      // failure; silence until its timeout is a loss.
      const bool timed_out = r.done - r.sent >= wait - std::chrono::milliseconds(200);
      r.outcome = timed_out ? Outcome::kLost : Outcome::kFailedExplicit;
      r.detail = (timed_out ? "no answer in time: " : "connection: ") + res.status().ToString();
    } else if (res->status != 200) {
      r.outcome = IsShoalError(res->body) ? Outcome::kFailedExplicit : Outcome::kLost;
      r.detail = std::to_string(res->status) + " " + Shorten(res->body);
    } else {
      auto j = nlohmann::json::parse(res->body, nullptr, false);
      std::vector<float> got;
      if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty()) {
        const auto& e = j["data"][0]["embedding"];
        if (e.is_array()) {
          for (const auto& x : e) got.push_back(x.is_number() ? x.get<float>() : NAN);
        }
      }
      const auto want = options_.want ? options_.want(text)
                                      : IdentityVector(IdentityTokens(text), static_cast<uint32_t>(options_.dim), true);
      if (Close(got, want, options_.tolerance)) {
        r.outcome = Outcome::kCompleted;
        const std::string attempts = res->Header("x-shoal-attempts");
        r.attempts = attempts.empty() ? 1 : std::atoi(attempts.c_str());
      } else {
        r.outcome = Outcome::kLost;
        r.detail = "wrong answer for '" + text + "': " + Shorten(res->body);
      }
    }
    Record(std::move(r));
  }
}

void LoadDriver::Record(RequestRecord r) {
  switch (r.outcome) {
    case Outcome::kCompleted: ++completed_; break;
    case Outcome::kFailedExplicit: ++failed_; break;
    case Outcome::kLost: ++lost_; break;
  }
  const bool error = r.outcome != Outcome::kCompleted;
  {
    std::lock_guard lock(mu_);
    records_.push_back(std::move(r));
  }
  if (error && !stop_) std::this_thread::sleep_for(options_.pause_after_error);
}

Tally LoadDriver::Summarize(Clock::time_point fault) {
  std::lock_guard lock(mu_);
  Tally t;
  std::vector<double> before_ms;
  for (const auto& r : records_) {
    if (r.done < fault && r.outcome == Outcome::kCompleted) {
      before_ms.push_back(std::chrono::duration<double, std::milli>(r.done - r.sent).count());
    }
  }
  std::sort(before_ms.begin(), before_ms.end());
  const double p99 = before_ms.empty() ? 0 : before_ms[before_ms.size() * 99 / 100];
  const double slow_ms = std::max(1000.0, 5 * p99);
  for (const auto& r : records_) {
    ++t.sent;
    const double ms = std::chrono::duration<double, std::milli>(r.done - r.sent).count();
    bool disturbed = false;
    switch (r.outcome) {
      case Outcome::kCompleted:
        ++t.completed;
        t.retried += r.attempts > 1;
        disturbed = ms > slow_ms;
        break;
      case Outcome::kFailedExplicit:
        ++t.failed_explicit;
        disturbed = true;
        if (t.failure_examples.size() < 3) t.failure_examples.push_back(r.detail);
        break;
      case Outcome::kLost:
        ++t.lost;
        disturbed = true;
        if (t.lost_examples.size() < 5) t.lost_examples.push_back(r.detail);
        break;
    }
    if (r.done > fault && r.outcome == Outcome::kCompleted) {
      t.slowest_after_fault_ms = std::max(t.slowest_after_fault_ms, ms);
    }
    if (disturbed && r.done > fault) {
      t.recovery_s = std::max(t.recovery_s, std::chrono::duration<double>(r.done - fault).count());
    }
  }
  return t;
}

}  // namespace shoal::chaos
