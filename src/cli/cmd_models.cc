// shoal models add|ls|rm: the catalog, self-service.
#include <iostream>

#include "cli/catalog_admin.h"
#include "cli/commands.h"
#include "common/log.h"

namespace shoal::cli {
namespace {

int Fail(const Status& s) {
  std::cerr << "error: " << s.ToString() << "\n";
  return 1;
}

}  // namespace

Subcommand AddModels(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "The model catalog: add, list, remove");
  sub->require_subcommand(1);
  auto nats = std::make_shared<std::string>("nats://127.0.0.1:4222");
  sub->add_option("--nats", *nats, "NATS URL")->capture_default_str();
  auto* add = sub->add_subcommand("add", "Register models from profile files (YAML)");
  auto files = std::make_shared<std::vector<std::string>>();
  add->add_option("profiles", *files, "profile files")->required()->check(CLI::ExistingFile);
  auto* ls = sub->add_subcommand("ls", "List the catalog");
  auto* rm = sub->add_subcommand("rm", "Remove a model from the catalog");
  auto id = std::make_shared<std::string>();
  rm->add_option("id", *id, "model id")->required();

  return {sub, [=] {
            auto admin = CatalogAdmin::Connect(*nats);
            if (!admin.ok()) return Fail(admin.status());
            if (add->parsed()) {
              for (const auto& f : *files) {
                auto spec = ModelSpec::LoadFile(f);
                if (!spec.ok()) return Fail(spec.status());
                if (Status s = admin->Register(*spec); !s.ok()) return Fail(s);
                std::cout << "added " << spec->id << "\n";
              }
              return 0;
            }
            if (ls->parsed()) {
              auto specs = admin->List();
              if (!specs.ok()) return Fail(specs.status());
              for (const auto& s : *specs) {
                std::cout << s.id << "\t" << s.runtime << "\t" << s.task << "\tpool=" << s.pool << "\n";
              }
              return 0;
            }
            if (Status s = admin->Remove(*id); !s.ok()) return Fail(s);
            std::cout << "removed " << *id << "\n";
            return 0;
          }};
}

}  // namespace shoal::cli
