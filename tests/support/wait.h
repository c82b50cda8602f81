// Waiting in tests for an event that can only be observed by looking (a
// counter, a gauge, a state): polls until it holds, or gives up. The timeout
// only bounds a failing test; a passing one never depends on it.
#pragma once

#include <chrono>
#include <thread>

namespace shoal::testing {

template <class Pred>
bool WaitFor(Pred&& done, std::chrono::milliseconds within = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace shoal::testing
