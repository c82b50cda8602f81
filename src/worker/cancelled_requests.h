// CancelledRequests: the request ids whose clients hung up, as gateways
// announced them on shoal.cancel.<pool> (queue/subjects.h), each kept until
// its deadline — after that the item would be dropped as expired anyway.
// BatchRunner drops a cancelled request's items instead of running them.
//
// Bounded: past `capacity` ids, the one with the nearest deadline goes
// first (the cancellation is best effort; the deadline still bounds waste).
//
// Threading: thread-safe; Add on the intake loop, Contains on executors.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace shoal::worker {

class CancelledRequests {
 public:
  explicit CancelledRequests(size_t capacity = 100000) : capacity_(capacity) {}

  // Parses a notice ("<request-id> <deadline-unix-ms>") and records it;
  // false when it is malformed.
  bool AddNotice(std::string_view notice, int64_t now_unix_ms);
  void Add(std::string request_id, int64_t until_unix_ms, int64_t now_unix_ms);
  bool Contains(std::string_view request_id) const;
  size_t size() const;

 private:
  void PruneLocked(int64_t now_unix_ms);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, int64_t> until_;  // guarded by mu_
  std::multimap<int64_t, std::string> by_until_;    // guarded by mu_
};

}  // namespace shoal::worker
