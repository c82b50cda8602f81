// shoal keys create|ls|rm: the API keys (queue/keys.h) in the shoal_keys
// bucket, which every gateway run with `--auth keys` watches — a key made
// or removed here applies at once, without a restart.
//
// `create` prints the secret once, alone on stdout (so a script can capture
// it; the rest goes to stderr): only its SHA-256 is stored, and nothing can
// show it again. `ls` shows names, scopes and limits, never secrets.
#include <cstdio>
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "queue/keys.h"
#include "queue/topology.h"

namespace shoal::cli {
namespace {

struct KeysBucket {
  queue::ConnectionPtr nc;
  queue::JsCtxPtr js;
  queue::KvStorePtr kv;
};

Result<KeysBucket> ConnectKeys(const std::string& url, const queue::NatsSecurity& security) {
  KeysBucket b;
  SHOAL_ASSIGN_OR_RETURN(b.nc, queue::Connect({.url = url, .security = security, .name = "shoal-keys"}));
  SHOAL_ASSIGN_OR_RETURN(b.js, queue::NewJetStream(b.nc.get()));
  SHOAL_ASSIGN_OR_RETURN(b.kv, queue::OpenKeysBucket(b.js.get()));
  return b;
}

std::string Scope(const queue::ApiKey& k) {
  if (k.models.empty()) return "-";
  std::string out;
  for (const auto& m : k.models) out += (out.empty() ? "" : ",") + m;
  return out;
}

std::string LimitText(uint32_t n) { return n == 0 ? "-" : std::to_string(n); }

std::string Utc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Subcommand AddKeys(CLI::App& app) {
  auto* sub = app.add_subcommand("keys", "API keys for gateways run with --auth keys: create, list, remove");
  sub->require_subcommand(1);
  auto nats = std::make_shared<std::string>("nats://127.0.0.1:4222");
  sub->add_option("--nats", *nats, "NATS URL (tls://... for TLS)")->capture_default_str();
  auto security = std::make_shared<queue::NatsSecurity>();
  AddNatsSecurityOptions(sub, security.get());

  auto* create = sub->add_subcommand("create", "Make a key; prints its secret, once");
  auto key = std::make_shared<queue::ApiKey>();
  auto models = std::make_shared<std::string>("*");
  create->add_option("--name", key->name, "the key's name (letters, digits, '_', '-'); unique")->required();
  create->add_option("--models", *models, "models it may use: '*' (all), or ids separated by commas")
      ->capture_default_str();
  create->add_flag("--admin", key->admin, "may use the admin routes (/v1/admin/..., /v1/cluster)");
  create->add_option("--rps", key->rps, "requests per second, per gateway (0: unlimited)")->capture_default_str();
  create->add_option("--tokens-per-min", key->tokens_per_min,
                     "estimated tokens per minute, per gateway (0: unlimited)")
      ->capture_default_str();
  auto priority = std::make_shared<std::string>("interactive");
  create->add_option("--priority", *priority,
                     "the queue class of its requests that send no X-Shoal-Priority: interactive or batch")
      ->check(CLI::IsMember({"interactive", "batch"}))
      ->capture_default_str();

  auto* ls = sub->add_subcommand("ls", "List the keys (never their secrets)");
  auto* rm = sub->add_subcommand("rm", "Remove a key: every gateway refuses it at once");
  auto target = std::make_shared<std::string>();
  rm->add_option("name", *target, "the key's name")->required();

  return {sub, [=] {
            auto bucket = ConnectKeys(*nats, *security);
            if (!bucket.ok()) return Fail(bucket.status());
            if (create->parsed()) {
              auto scope = queue::ParseModelScope(*models);
              if (!scope.ok()) return Fail(scope.status());
              if (scope->empty() && !key->admin) {
                return Fail(InvalidInput("--models: a key with no models and no --admin could do nothing"));
              }
              key->models = std::move(scope).value();
              key->priority = *queue::ParsePriority(*priority);  // checked by IsMember
              auto issued = queue::IssueKey(bucket->kv.get(), *key);
              if (!issued.ok()) return Fail(issued.status());
              const queue::ApiKey& k = issued->key;
              std::cout << issued->secret << "\n" << std::flush;
              std::cerr << "created key " << k.name << " (models: " << Scope(k) << (k.admin ? ", admin" : "")
                        << ", requests/s: " << (k.rps ? std::to_string(k.rps) : "unlimited")
                        << ", tokens/min: " << (k.tokens_per_min ? std::to_string(k.tokens_per_min) : "unlimited")
                        << ", priority: " << queue::PriorityName(k.priority)
                        << ").\nKeep the secret above: Shoal stores only its hash and cannot show it again.\n";
              return 0;
            }
            if (ls->parsed()) {
              auto keys = queue::ListKeys(bucket->kv.get());
              if (!keys.ok()) return Fail(keys.status());
              std::printf("%-24s %-32s %-5s %-8s %-12s %-11s %s\n", "NAME", "MODELS", "ADMIN", "RPS",
                          "TOKENS/MIN", "PRIORITY", "CREATED");
              for (const auto& k : *keys) {
                std::printf("%-24s %-32s %-5s %-8s %-12s %-11s %s\n", k.name.c_str(), Scope(k).c_str(),
                            k.admin ? "yes" : "no", LimitText(k.rps).c_str(), LimitText(k.tokens_per_min).c_str(),
                            std::string(queue::PriorityName(k.priority)).c_str(), Utc(k.created_unix_ms).c_str());
              }
              return 0;
            }
            if (Status s = queue::RevokeKey(bucket->kv.get(), *target); !s.ok()) return Fail(s);
            std::cout << "removed key " << *target << "\n";
            return 0;
          }};
}

}  // namespace shoal::cli
