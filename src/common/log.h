// Logging: spdlog, one line per event, to stderr. Components log with the
// request id where there is one ("rid=..."), so a request's path can be
// followed across gateway and worker.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace shoal {

// Sets the global level from a name ("debug", "info", "warn", "error");
// unknown names leave it at info. Safe to call more than once.
void InitLogging(std::string_view level);

}  // namespace shoal
