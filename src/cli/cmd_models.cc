// shoal models add|push|ls|rm|pin|unpin|add-lora|remove-lora: the catalog, self-service.
#include <cstdio>
#include <iostream>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "store/model_store.h"

namespace shoal::cli {
namespace {

std::string Megabytes(uint64_t bytes) {
  if (bytes == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

// Pushes `dir` to the model store with a progress line every half second;
// returns its digest.
Result<std::string> PushDirectory(store::ModelStore& store, const std::string& dir) {
  auto last = SteadyClock::now() - std::chrono::seconds(1);
  auto pushed = store.Push(dir, [&](std::string_view stage, uint64_t done, uint64_t total) {
    const auto now = SteadyClock::now();
    if (now - last >= std::chrono::milliseconds(500) || done == total) {
      last = now;
      std::printf("%s %s: %.0f %% (%.1f of %.1f MB)\n", std::string(stage).c_str(), dir.c_str(),
                  total ? 100.0 * done / total : 100.0, done / 1e6, total / 1e6);
      std::fflush(stdout);
    }
    return Status::Ok();
  });
  if (!pushed.ok()) return pushed.status();
  std::printf("pushed %s as %s: %zu files, %.1f MB sent, %.1f MB already in the store\n", dir.c_str(),
              pushed->digest.c_str(), pushed->manifest.files.size(), pushed->bytes_sent / 1e6,
              pushed->bytes_present / 1e6);
  return pushed->digest;
}

// Pushes the model of `spec` (its path) and the adapters its profile names;
// records their digests in `spec`.
Status PushModel(store::ModelStore& store, ModelSpec* spec) {
  SHOAL_ASSIGN_OR_RETURN(spec->artifact, PushDirectory(store, spec->path));
  for (LoraSpec& l : spec->loras) {
    SHOAL_ASSIGN_OR_RETURN(l.artifact, PushDirectory(store, l.path));
  }
  return Status::Ok();
}

}  // namespace

Subcommand AddModels(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "The model catalog: add, list, pin, remove, LoRA adapters");
  sub->require_subcommand(1);
  auto nats = std::make_shared<std::string>("nats://127.0.0.1:4222");
  sub->add_option("--nats", *nats, "NATS URL (tls://... for TLS)")->capture_default_str();
  auto security = std::make_shared<queue::NatsSecurity>();
  AddNatsSecurityOptions(sub, security.get());
  auto replicas = std::make_shared<int>(0);
  AddNatsReplicasOption(sub, replicas.get());

  auto* add = sub->add_subcommand(
      "add", "Register models: a model directory (Hugging Face layout, optional shoal.yaml) or a profile file");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto id = std::make_shared<std::string>();
  auto pin = std::make_shared<bool>(false);
  add->add_option("paths", *paths, "model directories or profile files")->required();
  add->add_option("--id", *id, "the model id (one path only; default: the profile's, or the directory's name)");
  add->add_flag("--pin", *pin, "keep it loaded on every worker that serves it");

  // The model store (store/model_store.h): files uploaded by digest, the
  // model registered with its manifest digest; workers anywhere fetch it.
  auto* push = sub->add_subcommand(
      "push", "Upload a model directory to the model store and register it: workers on any machine fetch it");
  auto push_dir = std::make_shared<std::string>();
  push->add_option("dir", *push_dir, "the model directory (Hugging Face layout, optional shoal.yaml)")->required();
  push->add_option("--id", *id, "the model id (default: the profile's, or the directory's name)");
  push->add_flag("--pin", *pin, "keep it loaded on every worker that serves it");

  auto* ls = sub->add_subcommand("ls", "List the catalog");
  auto* rm = sub->add_subcommand("rm", "Remove a model from the catalog");
  auto* pin_cmd = sub->add_subcommand("pin", "Keep a model loaded: never evicted");
  auto* unpin_cmd = sub->add_subcommand("unpin", "Let a model be evicted under memory pressure");
  auto target = std::make_shared<std::string>();
  for (auto* c : {rm, pin_cmd, unpin_cmd}) c->add_option("id", *target, "model id")->required();

  // LoRA adapters of a model in the catalog (catalog_admin.h): checked by
  // the base's runtime, measured, added to its spec; workers that hold the
  // base take it without reloading.
  auto* add_lora = sub->add_subcommand("add-lora", "Register a LoRA adapter (a PEFT directory) on a model");
  auto* remove_lora = sub->add_subcommand("remove-lora", "Remove a LoRA adapter from a model");
  auto lora_dir = std::make_shared<std::string>();
  auto lora_name = std::make_shared<std::string>();
  for (auto* c : {add_lora, remove_lora}) c->add_option("base", *target, "the base model's id")->required();
  add_lora->add_option("dir", *lora_dir, "the adapter directory (adapter_config.json, adapter_model.safetensors)")
      ->required();
  add_lora->add_option("--name", *lora_name, "the adapter's name: requests say \"BASE:NAME\"")->required();
  auto lora_push = std::make_shared<bool>(false);
  add_lora->add_flag("--push", *lora_push, "upload the adapter to the model store first (workers fetch it)");
  remove_lora->add_option("name", *lora_name, "the adapter's name")->required();

  return {sub, [=] {
            if (add->parsed() && !id->empty() && paths->size() > 1) {
              return Fail(InvalidInput("--id names one model; give one path"));
            }
            auto admin = admin::CatalogAdmin::Connect(*nats, *security, *replicas);
            if (!admin.ok()) return Fail(admin.status());
            if (add->parsed()) {
              for (const auto& path : *paths) {
                auto spec = admin::SpecFromPath(path, *id);
                if (!spec.ok()) return Fail(spec.status());
                if (*pin) spec->pinned = true;
                std::cout << "checking " << spec->id << " (" << spec->runtime << ", loading it once)...\n"
                          << std::flush;
                auto stored = admin->Register(std::move(spec).value(), queue::StreamLimits{.replicas = *replicas});
                if (!stored.ok()) return Fail(stored.status());
                std::cout << "added " << stored->id << ": " << TaskName(stored->task) << ", "
                          << Megabytes(stored->memory_bytes) << (stored->pinned ? ", pinned" : "") << "\n";
              }
              return 0;
            }
            if (push->parsed()) {
              auto store = store::ModelStore::Connect({.url = *nats, .security = *security, .name = "shoal models push"},
                                                      *replicas);
              if (!store.ok()) return Fail(store.status());
              auto spec = admin::SpecFromPath(*push_dir, *id);
              if (!spec.ok()) return Fail(spec.status());
              if (*pin) spec->pinned = true;
              if (Status s = PushModel(**store, &*spec); !s.ok()) return Fail(s);
              std::cout << "checking " << spec->id << " (" << spec->runtime << ", loading it once)...\n" << std::flush;
              auto stored = admin->Register(std::move(spec).value(), queue::StreamLimits{.replicas = *replicas});
              if (!stored.ok()) return Fail(stored.status());
              std::cout << "added " << stored->id << " (" << stored->artifact << "): " << TaskName(stored->task)
                        << ", " << Megabytes(stored->memory_bytes) << (stored->pinned ? ", pinned" : "") << "\n";
              return 0;
            }
            if (ls->parsed()) {
              auto specs = admin->List();
              if (!specs.ok()) return Fail(specs.status());
              std::printf("%-32s %-9s %-7s %-10s %-11s %-6s %s\n", "ID", "RUNTIME", "TASK", "POOL", "MEMORY", "PINNED",
                          "FILES");
              for (const auto& s : *specs) {
                // Where workers read its files: the model store (its digest, shortened) or a path.
                const std::string files = !s.artifact.empty() ? s.artifact.substr(0, 19) + "…"
                                          : !s.path.empty()   ? s.path
                                                              : "-";
                std::printf("%-32s %-9s %-7s %-10s %-11s %-6s %s\n", s.id.c_str(), s.runtime.c_str(),
                            std::string(TaskName(s.task)).c_str(), s.pool.c_str(), Megabytes(s.memory_bytes).c_str(),
                            s.pinned ? "yes" : "no", files.c_str());
              }
              return 0;
            }
            if (add_lora->parsed()) {
              std::cout << "checking LoRA " << *lora_name << " of " << *target << "...\n" << std::flush;
              LoraSpec lora{.name = *lora_name, .path = *lora_dir, .artifact = {}, .memory_bytes = 0};
              if (*lora_push) {
                auto store = store::ModelStore::Connect(
                    {.url = *nats, .security = *security, .name = "shoal models add-lora"}, *replicas);
                if (!store.ok()) return Fail(store.status());
                auto pushed = PushDirectory(**store, lora.path);
                if (!pushed.ok()) return Fail(pushed.status());
                lora.artifact = std::move(pushed).value();
              }
              auto stored = admin->AddLora(*target, std::move(lora));
              if (!stored.ok()) return Fail(stored.status());
              std::cout << "added " << *target << ":" << stored->name << " (" << stored->path << ", "
                        << Megabytes(stored->memory_bytes) << ")\n";
              return 0;
            }
            if (remove_lora->parsed()) {
              if (Status s = admin->RemoveLora(*target, *lora_name); !s.ok()) return Fail(s);
              std::cout << "removed " << *target << ":" << *lora_name << "\n";
              return 0;
            }
            if (rm->parsed()) {
              if (Status s = admin->Remove(*target); !s.ok()) return Fail(s);
              std::cout << "removed " << *target << "\n";
              return 0;
            }
            const bool pinned = pin_cmd->parsed();
            auto spec = admin->SetPinned(*target, pinned);
            if (!spec.ok()) return Fail(spec.status());
            std::cout << (pinned ? "pinned " : "unpinned ") << *target << "\n";
            return 0;
          }};
}

}  // namespace shoal::cli
