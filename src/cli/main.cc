// shoal — serve fleets of small models. See README.md and docs/.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "common/log.h"

int main(int argc, char** argv) {
  CLI::App app{"Shoal: serve fleets of small models from a shared queue of pulling workers"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level,
                 "debug (every step of every request, by rid), info, warn, error or off")
      ->envname("SHOAL_LOG_LEVEL")
      ->capture_default_str();
  shoal::LogFormat log_format = shoal::LogFormat::kText;
  app.add_option_function<std::string>(
         "--log-format",
         [&](const std::string& name) {
           auto f = shoal::ParseLogFormat(name);
           if (!f.ok()) throw CLI::ValidationError("--log-format", f.status().message());
           log_format = *f;
         },
         "text (default) or json: one JSON object per line, key=value fields such as rid as its own fields")
      ->envname("SHOAL_LOG_FORMAT");

  const shoal::cli::Subcommand commands[] = {
      shoal::cli::AddUp(app),
      shoal::cli::AddGateway(app),
      shoal::cli::AddWorker(app),
      shoal::cli::AddModels(app),
      shoal::cli::AddTokenize(app),
      shoal::cli::AddStatus(app),
      shoal::cli::AddKeys(app),
      shoal::cli::AddBench(app),
      shoal::cli::AddTune(app),
      shoal::cli::AddRuntimeHost(app),
      shoal::cli::AddRuntimeCheck(app),
  };
  CLI11_PARSE(app, argc, argv);
  if (shoal::Status s = shoal::InitLogging(log_level, log_format); !s.ok()) {
    std::fprintf(stderr, "shoal: --log-level: %s\n", s.message().c_str());
    return 2;
  }
  for (const auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return 2;
}
