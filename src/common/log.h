// Logging: spdlog, one line per event, to stderr.
//
// Components log with key=value fields where a line concerns something
// named — "rid=<request id>" above all, so a request's path can be followed
// across gateway and worker (at debug level every step of it logs a line:
// accepted, queued, run in a batch, answered). Two formats:
//
//   text  2026-11-30T16:40:01.123 I worker: serving use-lite (loaded in 812 ms)
//   json  {"ts":"2026-11-30T16:40:01.123Z","level":"info","msg":"...","rid":"..."}
//
// In JSON every key=value token of the message is also a field of its own,
// so a log pipeline can filter on rid, model or item without parsing text.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal {

enum class LogFormat { kText, kJson };

Result<LogFormat> ParseLogFormat(std::string_view name);

// Sets the global level ("debug", "info", "warn", "error", "off") and the
// format. Safe to call more than once.
Status InitLogging(std::string_view level, LogFormat format = LogFormat::kText);

// The JSON line for one event (what the json format writes, without the
// newline): for tests and for the formatter.
std::string JsonLogLine(std::string_view timestamp, std::string_view level, std::string_view message);

}  // namespace shoal
