#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <string>

namespace shoal {

void InitLogging(std::string_view level) {
  static bool once = [] {
    auto logger = spdlog::stderr_color_mt("shoal");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)once;
  auto lvl = spdlog::level::from_str(std::string(level));
  spdlog::set_level(lvl == spdlog::level::off && level != "off" ? spdlog::level::info : lvl);
}

}  // namespace shoal
