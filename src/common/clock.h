// Time as Shoal uses it. Deadlines and enqueue stamps cross processes, so they
// are wall-clock (Unix) times; durations inside one process use steady time.
#pragma once

#include <chrono>
#include <cstdint>

namespace shoal {

using SteadyClock = std::chrono::steady_clock;

inline int64_t UnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t UnixMillis() { return UnixMicros() / 1000; }

inline double Millis(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

inline int64_t MicrosSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t).count();
}

}  // namespace shoal
