// Identifiers for processes: short random tokens that are safe in NATS
// subjects, KV keys and consumer names ([a-z0-9] only).
#pragma once

#include <string>

namespace shoal {

// `n` random characters from [a-z0-9], seeded from the OS.
std::string RandomToken(size_t n);

// This machine's host name, reduced to [a-z0-9-].
std::string HostName();

}  // namespace shoal
