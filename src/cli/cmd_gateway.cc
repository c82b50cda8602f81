// shoal gateway --nats URL: the HTTP edge as a process of its own.
#include "baselines/baseline_gateways.h"
#include "cli/commands.h"
#include "common/log.h"
#include "gateway/gateway.h"

namespace shoal::cli {

void AddAdmissionOptions(CLI::App* sub, gateway::GatewayOptions* o) {
  sub->add_option_function<std::string>(
         "--auth", [o](const std::string& mode) { o->auth = *gateway::ParseAuthMode(mode); },
         "none: open data routes (admin routes: --admin-token, or local clients); keys: every route but "
         "/healthz and /readyz needs an API key (`shoal keys create`)")
      ->check(CLI::IsMember({"none", "keys"}))
      ->envname("SHOAL_AUTH")
      ->default_str("none");
  sub->add_option("--max-in-flight", o->max_in_flight,
                  "requests in flight at once; past it, 503 OVERLOADED at once (0: unbounded)")
      ->capture_default_str();
  sub->add_option("--batch-in-flight", o->batch_in_flight,
                  "requests of batch jobs (/v1/batches) this gateway keeps in flight at once")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void AddRequireLicenseOption(CLI::App* sub, bool* require_license) {
  sub->add_flag("--require-license", *require_license,
                "refuse to register a model whose files state no license unless its registrant does");
}

void AddTraceOptions(CLI::App* sub, std::string* otlp_endpoint, double* trace_sample) {
  sub->add_option("--otlp-endpoint", *otlp_endpoint,
                  "export trace spans to this OpenTelemetry collector (OTLP/HTTP JSON; a base URL such as "
                  "http://collector:4318, /v1/traces appended; default: $OTEL_EXPORTER_OTLP_ENDPOINT, "
                  "else no traces)");
  if (trace_sample) {
    sub->add_option("--trace-sample", *trace_sample,
                    "the share of requests without a sampled traceparent that start a trace (0 to 1)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
  }
}

void AddHttpsOptions(CLI::App* sub, http::ServerOptions* http) {
  auto* cert = sub->add_option("--tls-cert", http->tls_cert_file,
                               "serve HTTPS with this certificate chain (PEM; with --tls-key)");
  auto* key = sub->add_option("--tls-key", http->tls_key_file, "private key (PEM) of --tls-cert");
  cert->needs(key);
  key->needs(cert);
}

void AddConnectionOptions(CLI::App* sub, http::ServerOptions* http) {
  auto header_timeout_s = std::make_shared<double>(std::chrono::duration<double>(http->header_timeout).count());
  sub->add_option("--header-timeout-s", *header_timeout_s,
                  "a request's head must arrive within this once its first byte has (idle keep-alive "
                  "connections wait up to 120 s for that byte)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->each([http](const std::string& seconds) {
        http->header_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::stod(seconds) * 1000));
      });
  sub->add_option("--max-connections", http->max_connections,
                  "connections open at once; past it, 503 OVERLOADED and close (0: no cap)")
      ->capture_default_str();
}

void AddPayloadStoreOption(CLI::App* sub, std::string* url) {
  sub->add_option("--payload-store", *url,
                  "where items too large for a NATS message wait: a directory (default: " +
                      queue::DefaultPayloadStoreUrl() +
                      ") or s3://BUCKET[/PREFIX][?endpoint=URL&region=R] (credentials: AWS_ACCESS_KEY_ID, "
                      "AWS_SECRET_ACCESS_KEY); the same for every gateway and worker")
      ->envname("SHOAL_PAYLOAD_STORE");
}

Subcommand AddGateway(CLI::App& app) {
  auto* sub = app.add_subcommand("gateway", "Run a gateway (the HTTP edge) against a NATS cluster");
  auto opts = std::make_shared<gateway::GatewayOptions>();
  opts->nats_url = "nats://127.0.0.1:4222";
  auto timeout_ms = std::make_shared<int64_t>(30000);
  sub->add_option("--nats", opts->nats_url, "NATS URL (tls://... for TLS)")->capture_default_str();
  AddNatsSecurityOptions(sub, &opts->nats_security);
  AddNatsReplicasOption(sub, &opts->stream_limits.replicas);
  AddHttpsOptions(sub, &opts->http);
  sub->add_option("--host", opts->http.host, "listen address")->capture_default_str();
  sub->add_option("--port", opts->http.port, "listen port (0: any free port)")->capture_default_str();
  sub->add_option("--io-threads", opts->http.io_threads, "HTTP I/O threads")->capture_default_str();
  sub->add_option("--max-body-bytes", opts->http.max_body_bytes, "larger bodies get 413")->capture_default_str();
  AddConnectionOptions(sub, &opts->http);
  sub->add_option("--timeout-ms", *timeout_ms, "default request deadline")->capture_default_str();
  auto hedge_after_ms = std::make_shared<int64_t>(500);
  sub->add_option("--hedge-after-ms", *hedge_after_ms,
                  "an item unstored this long means its work stream is between leaders: its pool's items also go "
                  "straight to workers until it stores again; one stored this long with nothing of its model "
                  "answered since also goes to idle workers (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--id", opts->id, "gateway id (default: random)");
  auto in_process = std::make_shared<bool>(false);
  auto models_dir = std::make_shared<std::string>();
  sub->add_flag("--in-process", *in_process, "benchmark baseline: run models inside the gateway, no NATS, no workers");
  sub->add_option("--models-dir", *models_dir, "profiles for --in-process");
  sub->add_option("--admin-token", opts->admin_token,
                  "bearer token for /v1/admin (default: $SHOAL_ADMIN_TOKEN; none: local clients only)")
      ->envname("SHOAL_ADMIN_TOKEN");
  AddAdmissionOptions(sub, opts.get());
  AddPayloadStoreOption(sub, &opts->payload_store);
  AddModelCacheOptions(sub, &opts->cache_dir, &opts->cache_bytes);
  AddRequireLicenseOption(sub, &opts->require_license);
  AddTraceOptions(sub, &opts->otlp_endpoint, &opts->trace_sample);
  sub->add_option("--offload-bytes", opts->offload_bytes,
                  "items larger than this go to the payload store (so do all that do not fit a NATS message)")
      ->capture_default_str();
  sub->add_option("--max-item-bytes", opts->limits.max_item_bytes, "larger items get 413")->capture_default_str();
  sub->add_option("--max-queued-per-model", opts->stream_limits.max_msgs_per_subject,
                  "requests (items) one model may have waiting or running in its pool's work stream; "
                  "past it, 503 OVERLOADED")
      ->capture_default_str();
  auto dispatch = std::make_shared<std::string>("pull");
  sub->add_option("--dispatch", *dispatch,
                  "pull: workers pull from the JetStream queue (Shoal); push-rr / push-lo: benchmark "
                  "baseline, the gateway pushes each request to one worker (started with --accept-push), "
                  "round-robin / least outstanding")
      ->check(CLI::IsMember({"pull", "push-rr", "push-lo"}))
      ->capture_default_str();
  return {sub, [opts, timeout_ms, hedge_after_ms, dispatch, in_process, models_dir] {
            BlockStopSignals();
            opts->default_timeout = std::chrono::milliseconds(*timeout_ms);
            opts->hedge_after = std::chrono::milliseconds(*hedge_after_ms);
            if (opts->stream_limits.max_msgs_per_subject < 1) {
              spdlog::error("gateway: --max-queued-per-model must be at least 1");
              return 2;
            }
            baselines::UseDispatch(*baselines::ParseDispatchMode(*dispatch), opts.get());  // checked by IsMember
            if (*in_process) {
              if (Status s = baselines::UseInProcess(models_dir->empty() ? DefaultModelsDir() : *models_dir, opts.get());
                  !s.ok()) {
                spdlog::error("gateway: {}", s.ToString());
                return 1;
              }
            }
            auto gw = gateway::Gateway::Start(*opts);
            if (!gw.ok()) {
              spdlog::error("gateway: {}", gw.status().ToString());
              return 1;
            }
            WaitForStopSignal();
            spdlog::info("stopping: draining in-flight requests");
            (*gw)->Drain(std::chrono::seconds(10));
            return 0;
          }};
}

}  // namespace shoal::cli
