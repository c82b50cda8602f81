#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace shoal {
namespace {

// A key of a key=value token: lower-case letters, digits and '_', starting
// with a letter.
bool IsFieldKey(std::string_view k) {
  if (k.empty() || k.size() > 32 || k[0] < 'a' || k[0] > 'z') return false;
  for (char c : k) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Writes each event as one JSON object per line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto t = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[80];  // room for any int a compiler cannot rule out
    std::snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    const auto level = spdlog::level::to_string_view(msg.level);
    std::string line = JsonLogLine(ts, std::string_view(level.data(), level.size()),
                                   std::string_view(msg.payload.data(), msg.payload.size()));
    line.push_back('\n');
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return InvalidInput("log format '" + std::string(name) + "': expected text or json");
}

std::string JsonLogLine(std::string_view timestamp, std::string_view level, std::string_view message) {
  nlohmann::ordered_json line;
  line["ts"] = timestamp;
  line["level"] = level;
  line["msg"] = message;
  // key=value tokens, first occurrence of a key wins; a value ends at a
  // space and loses trailing prose punctuation (',', ';', ':').
  size_t i = 0;
  while (i < message.size()) {
    const size_t end = std::min(message.find(' ', i), message.size());
    const std::string_view token = message.substr(i, end - i);
    i = end + 1;
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key(token.substr(0, eq));
    std::string_view value = token.substr(eq + 1);
    while (!value.empty() && (value.back() == ',' || value.back() == ';' || value.back() == ':')) {
      value.remove_suffix(1);
    }
    if (IsFieldKey(key) && !value.empty() && !line.contains(key)) line[key] = value;
  }
  // A message that is not UTF-8 (an input quoted in an error) is written
  // with U+FFFD in place of the bad bytes rather than lost.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Status InitLogging(std::string_view level, LogFormat format) {
  static bool once = [] {
    spdlog::set_default_logger(spdlog::stderr_color_mt("shoal"));
    return true;
  }();
  (void)once;
  const auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return InvalidInput("log level '" + std::string(level) + "': expected debug, info, warn, error or off");
  }
  spdlog::set_level(lvl);
  if (format == LogFormat::kJson) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v"));
  }
  return Status::Ok();
}

}  // namespace shoal
