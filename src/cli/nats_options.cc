// The NATS security flags every subcommand that connects to NATS shares:
// TLS (a CA to trust, an optional client certificate) and credentials. The
// password can come from the environment so that it stays off the command
// line (and out of `ps`).
#include "cli/commands.h"

namespace shoal::cli {

void AddNatsSecurityOptions(CLI::App* sub, queue::NatsSecurity* s) {
  const char* group = "NATS security";
  sub->add_option("--nats-ca", s->ca_file, "CA file (PEM) to trust for the NATS server's certificate; "
                                           "requires TLS (a tls:// URL does too)")
      ->check(CLI::ExistingFile)
      ->group(group);
  sub->add_option("--nats-cert", s->cert_file, "client certificate (PEM) for NATS mutual TLS")
      ->check(CLI::ExistingFile)
      ->group(group);
  sub->add_option("--nats-key", s->key_file, "private key (PEM) of --nats-cert")
      ->check(CLI::ExistingFile)
      ->group(group);
  sub->add_option("--nats-user", s->user, "NATS user (with --nats-password)")
      ->envname("SHOAL_NATS_USER")
      ->group(group);
  sub->add_option("--nats-password", s->password, "NATS password (better: $SHOAL_NATS_PASSWORD)")
      ->envname("SHOAL_NATS_PASSWORD")
      ->group(group);
  sub->add_option("--nats-creds", s->creds_file, "NATS .creds file (JWT + nkey seed: NATS 2.x accounts)")
      ->check(CLI::ExistingFile)
      ->group(group);
}

void AddNatsReplicasOption(CLI::App* sub, int* replicas) {
  sub->add_option("--replicas", *replicas,
                  "JetStream replicas of the streams and KV buckets this process creates (3 or 5 on a "
                  "JetStream cluster; default 1, and existing ones keep theirs)")
      ->check(CLI::Range(1, 5))
      ->group("NATS");
}

}  // namespace shoal::cli
