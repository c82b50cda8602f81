#include "worker/cancelled_requests.h"

#include <charconv>

namespace shoal::worker {

bool CancelledRequests::AddNotice(std::string_view notice, int64_t now_unix_ms) {
  const size_t space = notice.rfind(' ');
  if (space == std::string_view::npos || space == 0) return false;
  int64_t until = 0;
  const std::string_view number = notice.substr(space + 1);
  auto r = std::from_chars(number.data(), number.data() + number.size(), until);
  if (r.ec != std::errc() || r.ptr != number.data() + number.size()) return false;
  Add(std::string(notice.substr(0, space)), until, now_unix_ms);
  return true;
}

void CancelledRequests::Add(std::string request_id, int64_t until_unix_ms, int64_t now_unix_ms) {
  std::lock_guard lock(mu_);
  PruneLocked(now_unix_ms);
  if (until_unix_ms <= now_unix_ms || until_.contains(request_id)) return;
  if (until_.size() >= capacity_) {
    until_.erase(by_until_.begin()->second);
    by_until_.erase(by_until_.begin());
  }
  by_until_.emplace(until_unix_ms, request_id);
  until_.emplace(std::move(request_id), until_unix_ms);
}

bool CancelledRequests::Contains(std::string_view request_id) const {
  std::lock_guard lock(mu_);
  return until_.contains(std::string(request_id));
}

size_t CancelledRequests::size() const {
  std::lock_guard lock(mu_);
  return until_.size();
}

void CancelledRequests::PruneLocked(int64_t now_unix_ms) {
  while (!by_until_.empty() && by_until_.begin()->first <= now_unix_ms) {
    until_.erase(by_until_.begin()->second);
    by_until_.erase(by_until_.begin());
  }
}

}  // namespace shoal::worker
