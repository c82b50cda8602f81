// IdentityClients: the load the fault tests kill something under. Client
// threads each send `per_thread` /v1/embeddings requests, one after
// another, every text unique, for an identity model of 8 dimensions, and
// check every vector against IdentityVector.
//
// Threading: done() from any thread while they run; the rest after Join.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shoal::testing {

class IdentityClients {
 public:
  IdentityClients(int port, std::string model, int threads, int per_thread);  // starts them
  ~IdentityClients() { Join(); }

  int total() const { return total_; }
  int done() const { return done_; }  // answered or failed so far
  void Join();

  int correct() const { return correct_; }  // 200 with the right vector
  int retried() const { return retried_; }  // of those, answered after a redelivery
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  const int total_;
  std::atomic<int> done_{0}, correct_{0}, retried_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;  // guarded by mu_ until Join
  std::vector<std::thread> threads_;
};

}  // namespace shoal::testing
