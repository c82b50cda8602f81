// Traces across the serving path: a client's W3C traceparent enters at the
// gateway, rides the work message to the worker, and both export their
// spans over OTLP/HTTP JSON to a collector (a real HTTP server here), every
// body checked against the protocol's documented fields
// (support/otlp_json_check.h). A collector that hangs costs the serving
// path no answer: every request is answered, and the spans that do not fit
// the exporters' queues are counted as dropped.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/metrics_text.h"
#include "support/otlp_json_check.h"
#include "support/scripted_http_server.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

constexpr char kTracedModel[] = "trace/embed";
constexpr char kClientTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kClientSpan[] = "00f067aa0ba902b7";

struct ExportedSpan {
  std::string service;
  json span;
  int64_t start() const { return std::stoll(span["startTimeUnixNano"].get<std::string>()); }
  int64_t end() const { return std::stoll(span["endTimeUnixNano"].get<std::string>()); }
  std::string attribute(const std::string& key) const {
    for (const auto& a : span["attributes"]) {
      if (a["key"] == key)
        return a["value"].begin().value().is_string()
                   ? a["value"].begin().value().get<std::string>()
                   : a["value"].begin().value().dump();
    }
    return "";
  }
};

// Every span the collector has received, each body checked as it is read.
std::vector<ExportedSpan> Spans(const ScriptedHttpServer& collector) {
  std::vector<ExportedSpan> out;
  for (const auto& r : collector.received()) {
    EXPECT_EQ(r.path, "/v1/traces");
    EXPECT_EQ(OtlpJsonCheck::Problems(r.body), std::vector<std::string>())
        << r.body.substr(0, 2000);
    const json body = json::parse(r.body);
    for (const auto& rs : body["resourceSpans"]) {
      std::string service;
      for (const auto& a : rs["resource"]["attributes"]) {
        if (a["key"] == "service.name") service = a["value"]["stringValue"];
      }
      for (const auto& ss : rs["scopeSpans"]) {
        for (const auto& s : ss["spans"]) out.push_back({service, s});
      }
    }
  }
  return out;
}

std::vector<ExportedSpan> OfTrace(const std::vector<ExportedSpan>& spans,
                                  const std::string& trace_id) {
  std::vector<ExportedSpan> out;
  for (const auto& s : spans) {
    if (s.span["traceId"] == trace_id) out.push_back(s);
  }
  return out;
}

class Traces : public ::testing::Test {
 protected:
  void StartServing(const std::string& collector_url, size_t offload_bytes = 1000 * 1000,
                    const std::string& model = kTracedModel,
                    const std::string& profile = IdentityProfile(kTracedModel,
                                                                 "identity: {dim: 8}\n")) {
    cluster_.Register(profile);
    worker::WorkerOptions wo;
    wo.otlp_endpoint = collector_url;
    worker_ = cluster_.StartWorkerWith(wo);
    cluster_.WaitForWorkers(model, 1);
    gateway::GatewayOptions go;
    go.otlp_endpoint = collector_url;
    go.offload_bytes = offload_bytes;
    gateway_ = cluster_.StartGateway(go);
    ASSERT_TRUE(gateway_);
  }

  TestCluster cluster_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

TEST_F(Traces, AClientsTraceContinuesThroughTheGatewayAndTheWorker) {
  ScriptedHttpServer collector(
      {{"/v1/traces", ScriptedHttpServer::Reply(200, "application/json", "{}")}});
  // Items over 1000 bytes wait in the payload store: the second one does.
  StartServing("http://127.0.0.1:" + std::to_string(collector.port()), 1000);
  const std::string big(3000, 'x');

  // Not sampled by the client: no spans, no trace id in the answer.
  const HttpResult unsampled =
      Call(gateway_->port(), "POST", "/v1/encode/" + std::string(kTracedModel),
           R"({"items":[{"text":"quiet"}]})",
           {{"traceparent", "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-00"}});
  ASSERT_EQ(unsampled.status, 200) << unsampled.body;
  EXPECT_EQ(unsampled.Header("x-shoal-trace-id"), "");

  const HttpResult r =
      Call(gateway_->port(), "POST", "/v1/encode/" + std::string(kTracedModel),
           json{{"items", {{{"text", "small"}}, {{"text", big}}}}}.dump(),
           {{"traceparent", std::string("00-") + kClientTraceId + "-" + kClientSpan + "-01"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("x-shoal-trace-id"), kClientTraceId);
  const std::string request_id = r.Header("x-shoal-request-id");

  // The gateway's 4 (server, admission, payload upload, result) and the
  // worker's per item: queue, tokenize, inference, result; and payload
  // fetch for the offloaded one.
  constexpr size_t kExpected = 4 + 2 * 4 + 1;
  std::vector<ExportedSpan> spans;
  ASSERT_TRUE(WaitFor([&] {
    return (spans = OfTrace(Spans(collector), kClientTraceId)).size() >= kExpected;
  })) << spans.size()
      << " spans";
  EXPECT_EQ(spans.size(), kExpected);

  const ExportedSpan* server = nullptr;
  std::multiset<std::string> gateway_names, worker_names;
  for (const auto& s : spans)
    (s.service == "shoal-gateway" ? gateway_names : worker_names).insert(s.span["name"]);
  for (const auto& s : spans) {
    if (s.span["kind"] == 2) server = &s;
  }
  ASSERT_TRUE(server);
  EXPECT_EQ(server->service, "shoal-gateway");
  EXPECT_EQ(server->span["name"], "POST /v1/encode");
  EXPECT_EQ(server->span["parentSpanId"], kClientSpan);  // under the client's span
  EXPECT_EQ(server->attribute("http.response.status_code"), "200");
  EXPECT_EQ(server->attribute("shoal.request_id"), request_id);
  EXPECT_EQ(gateway_names, (std::multiset<std::string>{"POST /v1/encode", "admission",
                                                       "payload upload", "result"}));
  EXPECT_EQ(worker_names,
            (std::multiset<std::string>{"queue", "queue", "tokenize", "tokenize", "inference",
                                        "inference", "result", "result", "payload fetch"}));

  const std::string server_id = server->span["spanId"];
  for (const auto& s : spans) {
    if (&s == server) continue;
    SCOPED_TRACE(s.span.dump());
    // Every other span is the server span's child, inside it in time (one
    // machine, one clock; the conversions of steady to Unix time agree to
    // well under a millisecond).
    EXPECT_EQ(s.span["parentSpanId"], server_id);
    EXPECT_GE(s.start(), server->start() - 1'000'000);
    EXPECT_LE(s.end(), server->end() + 1'000'000);
    EXPECT_EQ(s.attribute("shoal.request_id"), request_id);
    if (s.service == "shoal-worker") {
      EXPECT_EQ(s.attribute("shoal.model"), kTracedModel);
      EXPECT_EQ(s.attribute("shoal.worker"), worker_->id());
    }
    if (s.span["name"] == "queue") { EXPECT_EQ(s.span["kind"], 5); }  // CONSUMER
    if (s.span["name"] == "payload fetch") { EXPECT_EQ(s.attribute("shoal.item"), "1"); }
  }

  // The unsampled request, answered before, left nothing: exports are in
  // order, and its trace id appears nowhere.
  EXPECT_TRUE(OfTrace(Spans(collector), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").empty());

  // Without a traceparent, the gateway starts a trace (--trace-sample 1).
  const HttpResult fresh = Call(gateway_->port(), "POST", "/v1/embeddings", Embed(kTracedModel));
  ASSERT_EQ(fresh.status, 200);
  const std::string fresh_id = fresh.Header("x-shoal-trace-id");
  ASSERT_EQ(fresh_id.size(), 32u);
  std::vector<ExportedSpan> fresh_spans;
  ASSERT_TRUE(
      WaitFor([&] { return (fresh_spans = OfTrace(Spans(collector), fresh_id)).size() >= 7; }));
  for (const auto& s : fresh_spans) {
    if (s.span["kind"] == 2) { EXPECT_FALSE(s.span.contains("parentSpanId")); }  // a root
  }
}

TEST_F(Traces, AGenerationsPrefillAndDecodeAreSpans) {
  ScriptedHttpServer collector(
      {{"/v1/traces", ScriptedHttpServer::Reply(200, "application/json", "{}")}});
  StartServing("http://127.0.0.1:" + std::to_string(collector.port()), 1000 * 1000, "trace/llama",
               "id: trace/llama\nruntime: native\ntask: generate\npath: " + std::string(kModels) +
                   "/llama-tiny\npinned: true\nnative: {max_context: 64}\n");
  const HttpResult r = Call(gateway_->port(), "POST", "/v1/generate/trace/llama",
                            json{{"prompt", "The school of fish"},
                                 {"max_tokens", 6},
                                 {"temperature", 0},
                                 {"ignore_eos", true}}
                                .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string trace_id = r.Header("x-shoal-trace-id");
  std::vector<ExportedSpan> spans;
  // Each process exports its own, in its own time: wait for both.
  ASSERT_TRUE(WaitFor([&] {
    spans = OfTrace(Spans(collector), trace_id);
    const auto of = [&](const char* service) {
      return std::count_if(spans.begin(), spans.end(),
                           [&](const auto& s) { return s.service == service; });
    };
    return of("shoal-worker") >= 3 && of("shoal-gateway") >= 2;
  }));
  std::multiset<std::string> names;
  const ExportedSpan* prefill = nullptr;
  const ExportedSpan* decode = nullptr;
  for (const auto& s : spans) {
    names.insert(s.span["name"]);
    if (s.span["name"] == "prefill") prefill = &s;
    if (s.span["name"] == "decode") decode = &s;
  }
  EXPECT_EQ(names, (std::multiset<std::string>{"POST /v1/generate", "admission", "queue", "prefill",
                                               "decode"}));
  ASSERT_TRUE(prefill && decode);
  EXPECT_LE(prefill->end(), decode->start() + 1000);  // decoding follows the first token
  EXPECT_EQ(decode->attribute("shoal.model"), "trace/llama");
}

TEST_F(Traces, AGenerationRelayedToLlamaCppIsTracedToo) {
  const std::string dir = std::string(kModels) + "/llama-tiny-gguf-f32";
  const auto sidecar = std::filesystem::path(SHOAL_BINARY).parent_path() / "shoal-llamacpp";
  if (!std::filesystem::exists(dir) || !std::filesystem::exists(sidecar)) {
    GTEST_SKIP() << "no shoal-llamacpp or GGUF fixtures (scripts/make-test-gguf)";
  }
  ScriptedHttpServer collector(
      {{"/v1/traces", ScriptedHttpServer::Reply(200, "application/json", "{}")}});
  StartServing(
      "http://127.0.0.1:" + std::to_string(collector.port()), 1000 * 1000, "trace/gguf",
      "id: trace/gguf\nruntime: llamacpp\ntask: generate\npath: " + dir + "\npinned: true\n");
  const HttpResult r = Call(gateway_->port(), "POST", "/v1/completions",
                            json{{"model", "trace/gguf"},
                                 {"prompt", "The school of fish"},
                                 {"max_tokens", 6},
                                 {"temperature", 0}}
                                .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string trace_id = r.Header("x-shoal-trace-id");
  std::vector<ExportedSpan> spans;
  std::multiset<std::string> worker_names;
  ASSERT_TRUE(WaitFor([&] {
    spans = OfTrace(Spans(collector), trace_id);
    worker_names.clear();
    for (const auto& s : spans) {
      if (s.service == "shoal-worker") worker_names.insert(s.span["name"]);
    }
    return worker_names.size() >= 3;
  }));
  EXPECT_EQ(worker_names, (std::multiset<std::string>{"queue", "prefill", "decode"}));
}

TEST_F(Traces, AHungCollectorHoldsUpNoAnswer) {
  ScriptedHttpServer collector({{"/v1/traces", std::string(ScriptedHttpServer::kHang)}});
  StartServing("http://127.0.0.1:" + std::to_string(collector.port()));
  // Each request of 64 items makes 4 worker spans an item: past the worker
  // exporter's queue (2048) within 9 requests, while its first export hangs.
  json items = json::array();
  for (int i = 0; i < 64; ++i) items.push_back({{"text", "item " + std::to_string(i)}});
  const std::string body = json{{"items", items}}.dump();
  HttpClient http(gateway_->port());
  for (int i = 0; i < 12; ++i) {
    auto r = http.PostJson("/v1/encode/" + std::string(kTracedModel), body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
  }
  EXPECT_GE(collector.requests(), 1);  // the exporters did try
  const auto dropped =
      MetricValue(worker_->RenderMetrics(), "shoal_trace_spans_total{outcome=\"dropped\"}");
  ASSERT_TRUE(dropped);
  EXPECT_GT(*dropped, 0);
  const auto page = http.Get("/metrics");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(MetricValue(page->body, "shoal_trace_spans_total{outcome=\"exported\"}"));
  // Stopping is bounded too (the exporters cut the hung request).
  gateway_->Drain(std::chrono::seconds(1));
  worker_->Drain(std::chrono::seconds(1));
}

}  // namespace
}  // namespace shoal::testing
