// LoadDriver: the clients of a chaos scenario. Client threads, spread over
// one or more gateways, each send /v1/embeddings requests one after
// another, every text unique, and check every answer: against IdentityVector
// for an identity model (deterministic, so a wrong answer is caught, not
// only a missing one), or against `want` within `tolerance` for a real one.
//
// Each request ends in exactly one of:
//   completed        200 with the right vector;
//   failed_explicit  an HTTP error status with Shoal's error JSON
//                    ({"error":{"code",...}}), or a connection that was
//                    refused, reset or closed before the deadline — the
//                    client knows at once that it has no answer and can retry;
//   lost             no answer by the request's deadline plus a margin (a
//                    hang), a wrong vector, or an error without Shoal's error
//                    body. A chaos scenario passes only with none.
// After an error a client pauses briefly (as a real client would back off)
// so that a refused port does not count thousands of failures.
//
// Threading: Start and Stop from one thread; counters are atomics; records
// are appended under `mu_`.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shoal::chaos {

using Clock = std::chrono::steady_clock;

struct LoadOptions {
  std::vector<int> ports;  // gateways; client i talks to ports[i % size]
  int clients = 8;
  std::string model;
  int dim = 8;  // of the identity model's vectors
  // The right vector for a text, when the model is not an identity model
  // (another engine's answer on the same weights), and how close it must be.
  std::function<std::vector<float>(const std::string& text)> want;
  float tolerance = 0;
  // Streamed generation instead of embeddings: each request streams a
  // greedy /v1/completions of one of four prompts, and `right_text` says
  // whether its whole text is right (nothing missing, nothing twice).
  std::function<bool(const std::string& prompt, const std::string& text)> right_text;
  int new_tokens = 24;
  std::chrono::milliseconds deadline{10000};  // sent as X-Shoal-Timeout-Ms
  std::chrono::milliseconds margin{5000};     // the client waits deadline + margin
  std::chrono::milliseconds pause_after_error{100};
  std::string tag;  // makes texts unique across runs against the same cluster
};

enum class Outcome { kCompleted, kFailedExplicit, kLost };

struct RequestRecord {
  Clock::time_point sent, done;
  Outcome outcome = Outcome::kCompleted;
  int attempts = 1;     // X-Shoal-Attempts of a completed request
  std::string detail;   // why it failed or was lost
};

struct Tally {
  int64_t sent = 0, completed = 0, failed_explicit = 0, lost = 0;
  int64_t retried = 0;   // completed after a redelivery (X-Shoal-Attempts > 1)
  double recovery_s = 0; // see Summarize
  double slowest_after_fault_ms = 0;  // the slowest answer of a request still open at the fault, or sent after it
  std::vector<std::string> failure_examples, lost_examples;  // a few of each
};

class LoadDriver {
 public:
  explicit LoadDriver(LoadOptions options) : options_(std::move(options)) {}
  ~LoadDriver() { Stop(); }

  void Start();
  // Clients finish the request they are in (bounded by deadline + margin).
  void Stop();

  int64_t sent() const { return sent_; }
  int64_t completed() const { return completed_; }
  int64_t failed() const { return failed_; }
  int64_t lost() const { return lost_; }

  // Counts, and recovery: from `fault` to the answer of the last request
  // the fault disturbed — one that failed, was lost, or took longer than
  // max(1 s, 5 × the p99 of the requests answered before the fault). 0 when
  // nothing was disturbed. So it spans the fault's whole effect: a restart's
  // downtime, the AckWait before a dead worker's items come back.
  Tally Summarize(Clock::time_point fault);

 private:
  void Client(int index);
  void Record(RequestRecord r);  // counts it; pauses after an error

  LoadOptions options_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> sent_{0}, completed_{0}, failed_{0}, lost_{0};
  std::mutex mu_;
  std::vector<RequestRecord> records_;  // guarded by mu_
};

const char* OutcomeName(Outcome o);

}  // namespace shoal::chaos
