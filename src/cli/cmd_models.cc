// shoal models add|push|ls|rm|pin|unpin|add-lora|remove-lora|versions|show|promote|rollback|canary|eval|quantize:
// the catalog, self-service.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "admin/gateway_client.h"
#include "admin/gateway_push.h"
#include "admin/model_directory.h"
#include "admin/provenance.h"
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

// How a directory goes to the model store: straight over NATS, or through
// a gateway's admin API.
using Pusher = std::function<Result<store::PushResult>(const std::string& dir, const store::Progress&)>;

Pusher OverNats(store::ModelStore& store) {
  return [&store](const std::string& dir, const store::Progress& progress) { return store.Push(dir, progress); };
}

Pusher ThroughGateway(admin::GatewayClient& gateway) {
  return [&gateway](const std::string& dir, const store::Progress& progress) {
    return admin::PushThroughGateway(gateway, dir, progress);
  };
}

// Pushes `dir` to the model store with a progress line every half second;
// returns its digest.
Result<std::string> PushDirectory(const Pusher& push, const std::string& dir) {
  auto last = SteadyClock::now() - std::chrono::seconds(1);
  auto pushed = push(dir, [&](std::string_view stage, uint64_t done, uint64_t total) {
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
  SHOAL_ASSIGN_OR_RETURN(spec->artifact, PushDirectory(OverNats(store), spec->path));
  for (LoraSpec& l : spec->loras) {
    SHOAL_ASSIGN_OR_RETURN(l.artifact, PushDirectory(OverNats(store), l.path));
  }
  return Status::Ok();
}

std::string Time(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  const std::time_t t = unix_ms / 1000;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

std::string Capacity(const CapacityEstimate& c) {
  if (c.per_second <= 0) return "-";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f %s/s (batch %u)", c.per_second, c.unit.c_str(), c.batch);
  return buf;
}

void PrintAdded(const admin::VersionView& v) {
  const ModelSpec& s = v.version.spec;
  std::cout << "added " << s.id << " version " << s.version << " (" << VersionStateName(v.state) << "): "
            << TaskName(s.task) << ", " << Megabytes(s.memory_bytes) << (s.pinned ? ", pinned" : "")
            << (v.version.record.license.empty() ? "" : ", license " + v.version.record.license) << "\n";
}

// A quantized variant's judgement (admin/variant_gate.h) in one line.
void PrintVariant(const nlohmann::json& v) {
  if (!v.is_object()) return;
  std::printf("  variant      %s of version %u: %s", v.value("precision", "?").c_str(), v.value("of", 0u),
              v.value("passed", false) ? "within its bound" : "OUTSIDE its bound");
  const auto& g = v["golden"];
  if (g.contains("mean_cosine")) {
    std::printf(", cosine mean %.6f, min %.6f", g["mean_cosine"].get<double>(), g["min_cosine"].get<double>());
  }
  if (g.contains("agreement")) std::printf(", agreement %.1f %%", 100 * g["agreement"].get<double>());
  std::printf("\n");
  for (const auto& e : v["evaluations"]) {
    std::printf("               %s %s: %.4f (original %.4f)\n", e["evaluation"].get<std::string>().c_str(),
                e["measure"].get<std::string>().c_str(), e["variant"].get<double>(), e["original"].get<double>());
  }
  for (const auto& f : v["failures"]) std::printf("               failed: %s\n", f.get<std::string>().c_str());
}

// `shoal models show`: a version and its promotion record.
void PrintVersion(const admin::VersionView& v) {
  const ModelSpec& s = v.version.spec;
  const PromotionRecord& r = v.version.record;
  std::printf("%s version %u: %s\n", s.id.c_str(), v.version.version, std::string(VersionStateName(v.state)).c_str());
  std::printf("  runtime      %s (%s)\n", s.runtime.c_str(), std::string(TaskName(s.task)).c_str());
  std::printf("  source       %s\n", r.source.c_str());
  std::printf("  files        %zu, %s\n", r.files.size(), r.files_digest.empty() ? "-" : r.files_digest.c_str());
  std::printf("  license      %s%s\n", r.license.empty() ? "-" : r.license.c_str(),
              r.license_source.empty() ? "" : (" (" + r.license_source + ")").c_str());
  std::printf("  owner        %s\n", r.owner.empty() ? "-" : r.owner.c_str());
  std::printf("  registered   %s\n", Time(r.registered_unix_ms).c_str());
  std::printf("  memory       %s\n", Megabytes(r.memory_bytes).c_str());
  std::printf("  capacity     %s on %s\n", Capacity(r.capacity).c_str(),
              r.capacity.hardware_class.empty() ? "-" : r.capacity.hardware_class.c_str());
  const auto golden = nlohmann::json::parse(r.golden_json.empty() ? "null" : r.golden_json, nullptr, false);
  if (golden.is_object()) {
    std::printf("  golden       %zu outputs on %s\n", golden["outputs"].size(),
                golden["probe_set"].get<std::string>().c_str());
  }
  if (!v.golden_vs_serving.empty()) {
    const auto g = nlohmann::json::parse(v.golden_vs_serving);
    std::printf("  vs serving   version %u: agreement %.1f %%", v.serving, 100 * g["agreement"].get<double>());
    if (g.contains("mean_cosine")) {
      std::printf(", cosine mean %.4f, min %.4f", g["mean_cosine"].get<double>(), g["min_cosine"].get<double>());
    }
    if (g.contains("max_abs_diff")) std::printf(", logits differ by %.4g at most", g["max_abs_diff"].get<double>());
    std::printf("\n");
  }
  for (const std::string& e : r.evaluations) {
    const auto report = nlohmann::json::parse(e);
    std::printf("  evaluation   %s: %s", report["evaluation"].get<std::string>().c_str(),
                report["passed"].get<bool>() ? "passed" : "failed");
    for (const auto& [measure, value] : report["metrics"].items()) {
      std::printf(", %s %.3f", measure.c_str(), value.get<double>());
    }
    std::printf("\n");
  }
  if (!r.variant_json.empty()) PrintVariant(nlohmann::json::parse(r.variant_json, nullptr, false));
  for (const RecordedFile& f : r.files) {
    std::printf("    %-40s %12llu  %s\n", f.path.c_str(), static_cast<unsigned long long>(f.bytes), f.sha256.c_str());
  }
}

// A gateway's admin API, for what runs where the gateway is (evaluations
// through its router) or reaches the store only through it (pushes).
Result<std::string> PostToGateway(const admin::GatewayTarget& g, const std::string& path, const std::string& body) {
  return admin::GatewayClient(g).Call("POST", path, body);
}

// What registration through a gateway says besides the model.
struct GatewayRegistration {
  std::string id;
  bool pinned = false;
  std::string license;
  bool candidate = false;
};

// `shoal models push DIR --gateway URL`: the directory goes to the store
// through the gateway, which registers it by its digest (fetching it to
// check it, as it checks a path).
int PushModelThroughGateway(const admin::GatewayTarget& target, const std::string& dir,
                            const GatewayRegistration& r) {
  if (!std::filesystem::is_directory(dir)) {
    return Fail(InvalidInput(dir + ": --gateway pushes a model directory (its shoal.yaml is the profile)"));
  }
  auto spec = admin::SpecFromPath(dir, r.id);  // the id it would have, and what its profile names
  if (!spec.ok()) return Fail(spec.status());
  if (!spec->loras.empty()) {
    return Fail(InvalidInput(dir + ": its profile names LoRA adapters, which a gateway cannot read from here; "
                                   "push it without --gateway, or add them after it with "
                                   "`shoal models add-lora --push --gateway`"));
  }
  admin::GatewayClient gateway(target);
  auto digest = PushDirectory(ThroughGateway(gateway), dir);
  if (!digest.ok()) return Fail(digest.status());
  nlohmann::json body = {{"artifact", *digest}, {"id", spec->id}, {"pinned", r.pinned}};
  if (!r.license.empty()) body["license"] = r.license;
  if (r.candidate) body["candidate"] = true;
  std::cout << "checking " << spec->id << " on " << target.url << " (loading it once)...\n" << std::flush;
  auto answer = gateway.Call("POST", "/v1/admin/models", body.dump());
  if (!answer.ok()) return Fail(answer.status());
  const auto v = nlohmann::json::parse(*answer);
  std::cout << "added " << v.value("id", "?") << " version " << v.value("version", 0u) << " ("
            << v.value("state", "?") << "): " << v.value("task", "?") << ", "
            << Megabytes(v.value("memory_bytes", uint64_t{0})) << (v.value("pinned", false) ? ", pinned" : "")
            << "\n";
  return 0;
}

// `shoal models add-lora BASE DIR --name NAME --push --gateway URL`.
int AddLoraThroughGateway(const admin::GatewayTarget& target, const std::string& base, const std::string& name,
                          const std::string& dir) {
  admin::GatewayClient gateway(target);
  auto digest = PushDirectory(ThroughGateway(gateway), dir);
  if (!digest.ok()) return Fail(digest.status());
  std::cout << "checking LoRA " << name << " of " << base << " on " << target.url << "...\n" << std::flush;
  auto answer = gateway.Call("POST", "/v1/admin/models/" + base + "/loras",
                             nlohmann::json{{"name", name}, {"artifact", *digest}}.dump());
  if (!answer.ok()) return Fail(answer.status());
  const auto l = nlohmann::json::parse(*answer);
  std::cout << "added " << base << ":" << name << " (" << *digest << ", "
            << Megabytes(l.value("memory_bytes", uint64_t{0})) << ")\n";
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// `shoal models canary`: starts one from the flags given, or ends the one
// in flight.
int RunCanary(admin::CatalogAdmin& admin, const std::string& id, uint32_t version, nlohmann::json fields,
              bool shadow, bool stop) {
  if (stop) {
    if (version != 0 || !fields.empty() || shadow) return Fail(InvalidInput("--stop takes the model id alone"));
    auto ended = admin.StopCanary(id, admin::CommandLineOwner(), "stopped");
    if (!ended.ok()) return Fail(ended.status());
    std::cout << id << ": canary ended\n";
    return 0;
  }
  if (version == 0) return Fail(InvalidInput("canary: give the candidate's version"));
  if (!fields.contains("fraction")) return Fail(InvalidInput("canary: give --fraction, above 0, at most 1"));
  fields["version"] = version;
  if (shadow) fields["mode"] = "shadow";
  auto spec = CanarySpec::Parse(fields.dump());
  if (!spec.ok()) return Fail(spec.status());
  auto head = admin.StartCanary(id, *spec, admin::CommandLineOwner());
  if (!head.ok()) return Fail(head.status());
  std::printf("%s: %s canary on version %u for %.1f %% of its requests\n", id.c_str(),
              spec->shadow() ? "shadow" : "split", version, 100 * spec->fraction);
  return 0;
}

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
  // What a registration records besides the profile (admin/provenance.h).
  auto license = std::make_shared<std::string>();
  auto require_license = std::make_shared<bool>(false);
  auto candidate = std::make_shared<bool>(false);
  auto add_record_options = [&](CLI::App* c) {
    c->add_option("--license", *license, "the model's license, where its files state none (an SPDX id)");
    AddRequireLicenseOption(c, require_license.get());
    c->add_flag("--candidate", *candidate, "a new version waits for `shoal models promote` instead of serving");
  };
  add_record_options(add);

  // The model store (store/model_store.h): files uploaded by digest, the
  // model registered with its manifest digest; workers anywhere fetch it.
  auto* push = sub->add_subcommand(
      "push", "Upload a model directory to the model store and register it: workers on any machine fetch it");
  auto push_dir = std::make_shared<std::string>();
  push->add_option("dir", *push_dir, "the model directory (Hugging Face layout, optional shoal.yaml)")->required();
  push->add_option("--id", *id, "the model id (default: the profile's, or the directory's name)");
  push->add_flag("--pin", *pin, "keep it loaded on every worker that serves it");
  add_record_options(push);

  auto* ls = sub->add_subcommand("ls", "List the catalog");


  auto* rm = sub->add_subcommand("rm", "Remove a model from the catalog");
  auto* pin_cmd = sub->add_subcommand("pin", "Keep a model loaded: never evicted");
  auto* unpin_cmd = sub->add_subcommand("unpin", "Let a model be evicted under memory pressure");
  auto target = std::make_shared<std::string>();
  for (auto* c : {rm, pin_cmd, unpin_cmd}) c->add_option("id", *target, "model id")->required();

  // Versions (catalog/model_version.h): every registration is one.
  auto* versions = sub->add_subcommand("versions", "A model's versions: which serves, the rollback target, candidates");
  auto* show = sub->add_subcommand("show", "A version's promotion record: files, license, owner, capacity, golden outputs");
  auto* promote = sub->add_subcommand("promote", "Make a version the one that serves");
  auto* rollback = sub->add_subcommand("rollback", "Serve the version that served before the current one again");
  auto version = std::make_shared<uint32_t>(0);
  versions->add_option("id", *target, "model id")->required();
  show->add_option("id", *target, "model id, or id@VERSION (default: the serving version)")->required();
  promote->add_option("id", *target, "model id")->required();
  promote->add_option("version", *version, "the version to serve")->required();
  rollback->add_option("id", *target, "model id")->required();

  // Canaries (catalog/model_spec.h CanarySpec): a version tried on a share
  // of live traffic, split or shadowed; the gateways count and judge it.
  auto* canary = sub->add_subcommand(
      "canary", "Try a candidate on a share of live traffic: split, or shadowed (compared, then dropped)");
  canary->add_option("id", *target, "model id")->required();
  canary->add_option("version", *version, "the candidate (not with --stop)");
  auto canary_json = std::make_shared<nlohmann::json>(nlohmann::json::object());
  auto shadow = std::make_shared<bool>(false);
  auto stop = std::make_shared<bool>(false);
  for (auto [flag, field] : {std::pair{"--fraction", "fraction"}, std::pair{"--max-error-rate", "max_error_rate"},
                             std::pair{"--min-cosine", "min_cosine"}, std::pair{"--min-agreement", "min_agreement"}}) {
    canary->add_option_function<double>(flag, [canary_json, field](double v) { (*canary_json)[field] = v; },
                                        std::string("canary.") + field + ", 0 to 1 (docs/api.md, Canaries)");
  }
  canary->add_option_function<uint32_t>(
      "--min-requests", [canary_json](uint32_t n) { (*canary_json)["min_requests"] = n; },
      "requests (or, shadowed, comparisons) seen before the gateways judge it");
  canary->add_flag("--shadow", *shadow, "copy the share to the candidate; the serving version still answers it");
  canary->add_flag("--stop", *stop, "end the canary in flight");

  // Evaluations (admin/evaluation.h) run through a gateway's serving path.
  auto* eval = sub->add_subcommand("eval", "Run evaluations against a version through a gateway (and attach them)");
  eval->add_option("id", *target, "model id, or id@VERSION (default: the serving version)")->required();
  auto eval_set = std::make_shared<std::string>();
  auto attach = std::make_shared<bool>(false);
  eval->add_option("--set", *eval_set, "an evaluation set, JSONL (docs/evaluations.md); default: the sets attached");
  eval->add_flag("--attach", *attach, "attach the set to the model: a version is promoted only if it passes");
  // Quantized variants (admin/variant_gate.h): judged against the original
  // on the probe set, and on the attached evaluations through a gateway.
  auto* quantize = sub->add_subcommand(
      "quantize", "Make an int8 or bf16 variant of a version: a candidate, admitted only within its bound");
  quantize->add_option("id", *target, "model id, or id@VERSION (default: the serving version)")->required();
  auto int8 = std::make_shared<bool>(false);
  auto bf16 = std::make_shared<bool>(false);
  auto* int8_flag = quantize->add_flag("--int8", *int8, "int8 weights, per-token int8 activations");
  quantize->add_flag("--bf16", *bf16, "bf16 weights and activations")->excludes(int8_flag);
  quantize->add_option("--license", *license, "the model's license, where its files state none (an SPDX id)");
  auto bounds = std::make_shared<std::string>();
  quantize->add_option("--bounds", *bounds,
                       "tighter bounds, JSON: {\"min_mean_cosine\", \"min_cosine\", \"min_agreement\", \"max_eval_drop\"}");
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

  auto gateway = std::make_shared<admin::GatewayTarget>();
  for (auto* c : {eval, promote, quantize, push, add_lora}) {
    c->add_option("--gateway", gateway->url,
                  c == eval ? "the gateway whose admin API runs evaluations"
                            : "do it through this gateway's admin API (default: NATS directly)")
        ->capture_default_str();
    c->add_option("--admin-token", gateway->token, "its admin token or an admin key (default: $SHOAL_ADMIN_TOKEN)")
        ->envname("SHOAL_ADMIN_TOKEN");
  }
  auto gateway_given = [=] { return push->count("--gateway") > 0 || add_lora->count("--gateway") > 0; };

  return {sub, [=] {
            if (add->parsed() && !id->empty() && paths->size() > 1) {
              return Fail(InvalidInput("--id names one model; give one path"));
            }
            // Through a gateway: no NATS here (the gateway's license policy decides).
            if (add_lora->parsed() && !*lora_push && gateway_given()) {
              return Fail(InvalidInput("--gateway: add-lora goes through a gateway with --push (the adapter is uploaded)"));
            }
            if ((push->parsed() || add_lora->parsed()) && gateway_given()) {
              if (*require_license) return Fail(InvalidInput("--require-license: with --gateway, the gateway's policy decides"));
              if (add_lora->parsed()) return AddLoraThroughGateway(*gateway, *target, *lora_name, *lora_dir);
              return PushModelThroughGateway(*gateway, *push_dir,
                                             {.id = *id, .pinned = *pin, .license = *license, .candidate = *candidate});
            }
            auto admin = admin::CatalogAdmin::Connect(*nats, *security, *replicas);
            if (!admin.ok()) return Fail(admin.status());
            const admin::RegisterOptions record_options{.limits = {.replicas = *replicas},
                                                        .owner = admin::CommandLineOwner(),
                                                        .license = *license,
                                                        .require_license = *require_license,
                                                        .candidate = *candidate};
            if (add->parsed()) {
              for (const auto& path : *paths) {
                auto spec = admin::SpecFromPath(path, *id);
                if (!spec.ok()) return Fail(spec.status());
                if (*pin) spec->pinned = true;
                std::cout << "checking " << spec->id << " (" << spec->runtime << ", loading it once)...\n"
                          << std::flush;
                auto stored = admin->Register(std::move(spec).value(), record_options);
                if (!stored.ok()) return Fail(stored.status());
                PrintAdded(*stored);
              }
              return 0;
            }
            if (versions->parsed()) {
              VersionHead head;
              auto list = admin->Versions(*target, &head);
              if (!list.ok()) return Fail(list.status());
              std::printf("%-8s %-16s %-20s %-11s %-14s %s\n", "VERSION", "STATE", "REGISTERED", "MEMORY", "LICENSE",
                          "SOURCE");
              for (const auto& v : *list) {
                const PromotionRecord& r = v.version.record;
                std::printf("%-8u %-16s %-20s %-11s %-14s %s\n", v.version.version,
                            std::string(VersionStateName(v.state)).c_str(), Time(r.registered_unix_ms).c_str(),
                            Megabytes(r.memory_bytes).c_str(), r.license.empty() ? "-" : r.license.c_str(),
                            r.source.c_str());
              }
              if (head.canary.active()) {
                std::printf("canary: version %u, %s, %.1f %% of requests\n", head.canary.version,
                            head.canary.shadow() ? "shadowed" : "split", 100 * head.canary.fraction);
              }
              for (const VersionEvent& e : head.log) {
                std::printf("  %s  %-12s %u%s\n", Time(e.unix_ms).c_str(), e.action.c_str(), e.version,
                            e.by.empty() ? "" : ("  by " + e.by).c_str());
              }
              return 0;
            }
            if (show->parsed()) {
              auto ref = SplitVersionRef(*target);
              if (!ref.ok()) return Fail(ref.status());
              auto v = admin->Version(ref->id, ref->version);
              if (!v.ok()) return Fail(v.status());
              PrintVersion(*v);
              return 0;
            }
            if (eval->parsed()) {
              auto ref = SplitVersionRef(*target);
              if (!ref.ok()) return Fail(ref.status());
              const std::string base = "/v1/admin/models/" + std::string(ref->id);
              nlohmann::json body = nlohmann::json::object();
              if (ref->version != 0) body["version"] = ref->version;
              if (!eval_set->empty()) {
                const std::string jsonl = ReadFile(*eval_set);
                if (jsonl.empty()) return Fail(InvalidInput("--set: cannot read " + *eval_set));
                if (*attach) {
                  auto attached = PostToGateway(*gateway, base + "/evaluations", jsonl);
                  if (!attached.ok()) return Fail(attached.status());
                  std::cout << "attached " << *eval_set << " to " << ref->id << "\n";
                } else {
                  body["set"] = jsonl;
                }
              }
              std::cout << "evaluating " << *target << " through " << gateway->url << "...\n" << std::flush;
              auto ran = PostToGateway(*gateway, base + "/evaluate", body.dump());
              if (!ran.ok()) return Fail(ran.status());
              const auto out = nlohmann::json::parse(*ran);
              for (const auto& r : out["reports"]) {
                std::printf("%s (%s, %zu examples, %.1f s): %s\n", r["evaluation"].get<std::string>().c_str(),
                            r["task"].get<std::string>().c_str(), r["examples"].get<size_t>(),
                            r["seconds"].get<double>(), r["passed"].get<bool>() ? "passed" : "FAILED");
                for (const auto& [measure, value] : r["metrics"].items()) {
                  const auto& t = r["thresholds"];
                  std::printf("  %-12s %.4f%s\n", measure.c_str(), value.get<double>(),
                              t.contains(measure) ? (" (at least " + t[measure].dump() + ")").c_str() : "");
                }
                if (!r["failed"].get<std::string>().empty()) std::printf("  %s\n", r["failed"].get<std::string>().c_str());
              }
              return out["passed"].get<bool>() ? 0 : 3;
            }
            if (quantize->parsed()) {
              if (!*int8 && !*bf16) return Fail(InvalidInput("quantize: say --int8 or --bf16"));
              auto ref = SplitVersionRef(*target);
              if (!ref.ok()) return Fail(ref.status());
              const std::string precision = *int8 ? "int8" : "bf16";
              auto tightened = admin::VariantBounds::Tightened(bounds->empty() ? "{}" : *bounds);
              if (!tightened.ok()) return Fail(tightened.status());
              std::cout << "making the " << precision << " variant of " << *target << " (loading it once)...\n"
                        << std::flush;
              nlohmann::json variant;
              uint32_t number = 0;
              std::string state;
              if (quantize->count("--gateway") > 0) {
                nlohmann::json body = {{"precision", precision}};
                if (ref->version != 0) body["of"] = ref->version;
                if (!license->empty()) body["license"] = *license;
                if (!bounds->empty()) body["bounds"] = nlohmann::json::parse(*bounds);
                auto made = PostToGateway(*gateway, "/v1/admin/models/" + std::string(ref->id) + "/quantize",
                                          body.dump());
                if (!made.ok()) return Fail(made.status());
                const auto out = nlohmann::json::parse(*made);
                variant = out["record"]["variant"];
                number = out.value("version", 0u);
                state = out.value("state", "");
              } else {
                auto made = admin->Quantize(ref->id, ref->version, precision, record_options, *tightened);
                if (!made.ok()) return Fail(made.status());
                variant = nlohmann::json::parse(made->version.record.variant_json);
                number = made->version.version;
                state = VersionStateName(made->state);
              }
              std::printf("%s version %u: %s\n", std::string(ref->id).c_str(), number, state.c_str());
              PrintVariant(variant);
              if (!variant.value("passed", false)) return 3;
              if (state != "serving") std::printf("promote it with: shoal models promote %s %u\n", std::string(ref->id).c_str(), number);
              return 0;
            }
            if (canary->parsed()) return RunCanary(*admin, *target, *version, *canary_json, *shadow, *stop);
            if (promote->parsed() && promote->count("--gateway") > 0) {
              auto now = PostToGateway(*gateway, "/v1/admin/models/" + *target + "/promote",
                                       nlohmann::json{{"version", *version}}.dump());
              if (!now.ok()) return Fail(now.status());
              std::cout << *target << ": version " << *version << " serves\n";
              return 0;
            }
            if (promote->parsed() || rollback->parsed()) {
              auto now = promote->parsed() ? admin->Promote(*target, *version, admin::CommandLineOwner())
                                           : admin->Rollback(*target, admin::CommandLineOwner());
              if (!now.ok()) return Fail(now.status());
              std::cout << *target << ": version " << now->version.version << " serves\n";
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
              auto stored = admin->Register(std::move(spec).value(), record_options);
              if (!stored.ok()) return Fail(stored.status());
              PrintAdded(*stored);
              return 0;
            }
            if (ls->parsed()) {
              auto specs = admin->List();
              if (!specs.ok()) return Fail(specs.status());
              std::printf("%-32s %-7s %-9s %-7s %-10s %-11s %-6s %s\n", "ID", "VERSION", "RUNTIME", "TASK", "POOL",
                          "MEMORY", "PINNED", "FILES");
              for (const auto& s : *specs) {
                // Where workers read its files: the model store (its digest, shortened) or a path.
                const std::string files = !s.artifact.empty() ? s.artifact.substr(0, 19) + "…"
                                          : !s.path.empty()   ? s.path
                                                              : "-";
                std::printf("%-32s %-7s %-9s %-7s %-10s %-11s %-6s %s\n", s.id.c_str(),
                            s.version ? std::to_string(s.version).c_str() : "-", s.runtime.c_str(),
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
                auto pushed = PushDirectory(OverNats(**store), lora.path);
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
