// shoal — serve fleets of small models. See README.md and DESIGN.md.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/log.h"

int main(int argc, char** argv) {
  CLI::App app{"Shoal: serve fleets of small models from a shared queue of pulling workers"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warn or error")->capture_default_str();

  const shoal::cli::Subcommand commands[] = {
      shoal::cli::AddUp(app),
      shoal::cli::AddGateway(app),
      shoal::cli::AddWorker(app),
      shoal::cli::AddModels(app),
      shoal::cli::AddTokenize(app),
      shoal::cli::AddStatus(app),
      shoal::cli::AddKeys(app),
  };
  CLI11_PARSE(app, argc, argv);
  shoal::InitLogging(log_level);
  for (const auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return 2;
}
