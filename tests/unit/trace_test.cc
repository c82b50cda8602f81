// Traces: W3C traceparent, the OTLP/HTTP JSON body checked against the
// protocol's documented fields (support/otlp_json_check.h), the exporter's
// configuration, and the exporter against a real HTTP server that answers,
// refuses and hangs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "common/trace_context.h"
#include "support/otlp_json_check.h"
#include "support/scripted_http_server.h"
#include "support/wait.h"
#include "trace/otlp_json.h"
#include "trace/span_exporter.h"

namespace shoal {
namespace {

using testing::OtlpJsonCheck;
using testing::ScriptedHttpServer;

TEST(Traceparent, ReadsTheSpecificationsExample) {
  auto c = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(c);
  EXPECT_EQ(TraceIdHex(c->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(SpanIdHex(c->span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled());
  EXPECT_EQ(FormatTraceparent(*c), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  auto unsampled = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled());
}

TEST(Traceparent, RefusesWhatTheSpecificationCallsInvalid) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 has 4 fields
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(ParseTraceparent(bad)) << bad;
  }
  // A later version is read by its first four fields.
  EXPECT_TRUE(ParseTraceparent(
      "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds"));
}

TEST(Traceparent, NewIdsAreNeverZeroAndDiffer) {
  const SpanId a = NewSpanId(), b = NewSpanId();
  EXPECT_NE(a, b);
  EXPECT_NE(SpanIdHex(a), "0000000000000000");
  EXPECT_NE(TraceIdHex(NewTraceId()), TraceIdHex(NewTraceId()));
}

trace::Span TestSpan(const char* name, bool root) {
  TraceContext parent{.trace_id = NewTraceId(), .span_id = NewSpanId(), .flags = 1};
  trace::Span s = trace::ChildSpan(parent, name, trace::SpanKind::kServer,
                                   1'800'000'000'000'000'000, 1'800'000'000'250'000'000);
  if (root) s.parent_span_id = {};
  s.attributes = {
      {"http.request.method", std::string("POST")},
      {"http.response.status_code", int64_t{200}},
      {"shoal.ratio", 0.5},
      {"shoal.cold", true},
      {"url.path", std::string("/v1/encode/caf\xc3\xa9\xff")}};  // ends in a byte that is not UTF-8
  return s;
}

TEST(OtlpJson, ConformsToTheDocumentedFields) {
  std::vector<trace::Span> spans = {TestSpan("POST /v1/embeddings", true),
                                    TestSpan("inference", false)};
  spans[1].error = true;
  spans[1].status_message = "INFERENCE_ERROR: out of memory";
  const std::string body = trace::EncodeOtlpJson({"shoal-gateway", "gw1"}, spans);
  EXPECT_EQ(OtlpJsonCheck::Problems(body), std::vector<std::string>()) << body;

  const auto j = nlohmann::json::parse(body);
  const auto& rs = j["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "shoal-gateway");
  EXPECT_EQ(rs["resource"]["attributes"][1]["value"]["stringValue"], "gw1");
  const auto& out = rs["scopeSpans"][0]["spans"];
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["traceId"], TraceIdHex(spans[0].trace_id));
  EXPECT_FALSE(out[0].contains("parentSpanId"));  // a root
  EXPECT_EQ(out[1]["parentSpanId"], SpanIdHex(spans[1].parent_span_id));
  EXPECT_EQ(out[0]["kind"], 2);
  EXPECT_EQ(out[0]["startTimeUnixNano"], "1800000000000000000");
  EXPECT_EQ(out[0]["endTimeUnixNano"], "1800000000250000000");
  EXPECT_EQ(out[0]["attributes"][1]["value"]["intValue"], "200");
  EXPECT_EQ(out[0]["attributes"][2]["value"]["doubleValue"], 0.5);
  EXPECT_EQ(out[0]["attributes"][3]["value"]["boolValue"], true);
  EXPECT_EQ(out[0]["attributes"][4]["value"]["stringValue"], "/v1/encode/caf\xc3\xa9\xef\xbf\xbd");
  EXPECT_FALSE(out[0].contains("status"));  // unset
  EXPECT_EQ(out[1]["status"]["code"], 2);
  EXPECT_EQ(out[1]["status"]["message"], "INFERENCE_ERROR: out of memory");
}

TEST(OtlpJson, TheCheckCatchesWhatIsWrong) {
  // The checker itself fails on what the protocol does not document.
  EXPECT_FALSE(
      OtlpJsonCheck::Problems(R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAAA",
    "spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":"2","endTimeUnixNano":"1","kind":9,
    "attrs":[]}]}]}]})")
          .empty());
  EXPECT_EQ(OtlpJsonCheck::Problems(R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAAA",
    "spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":"2","endTimeUnixNano":"1","kind":9,
    "attrs":[]}]}]}]})")
                .size(),
            4u);  // trace id, order of times, kind, "attrs"
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ExporterOptions, FollowOpenTelemetrysVariables) {
  EXPECT_TRUE(trace::ExporterOptionsFromEnvironment("", {}).endpoint.empty());  // off
  EXPECT_EQ(trace::ExporterOptionsFromEnvironment("http://c:4318/", {}).endpoint,
            "http://c:4318/v1/traces");
  EXPECT_EQ(trace::ExporterOptionsFromEnvironment("http://c:4318/v1/traces", {}).endpoint,
            "http://c:4318/v1/traces");
  {
    ScopedEnv base("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318");
    EXPECT_EQ(trace::ExporterOptionsFromEnvironment("", {}).endpoint, "http://base:4318/v1/traces");
    ScopedEnv traces("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/custom");
    EXPECT_EQ(trace::ExporterOptionsFromEnvironment("", {}).endpoint,
              "http://t:9/custom");  // as is
    EXPECT_EQ(trace::ExporterOptionsFromEnvironment("http://flag:1", {}).endpoint,
              "http://flag:1/v1/traces");
  }
  ScopedEnv headers("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-team = search");
  const auto o = trace::ExporterOptionsFromEnvironment("http://c:4318", {});
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], std::make_pair(std::string("api-key"), std::string("s=cret")));
  EXPECT_EQ(o.headers[1], std::make_pair(std::string("x-team"), std::string("search")));
}

trace::ExporterOptions To(const ScriptedHttpServer& collector) {
  trace::ExporterOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(collector.port()) + "/v1/traces";
  o.resource = {"shoal-test", "t1"};
  o.headers = {{"x-team", "search"}};
  return o;
}

TEST(SpanExporter, SendsBatchesTheCollectorAccepts) {
  ScriptedHttpServer collector(
      {{"/v1/traces", ScriptedHttpServer::Reply(200, "application/json", "{}")}});
  trace::ExporterOptions o = To(collector);
  o.max_batch = 4;
  o.interval = std::chrono::milliseconds(50);
  MetricsRegistry metrics;
  trace::SpanExporter exporter(o, metrics);
  for (int i = 0; i < 10; ++i) exporter.Record(TestSpan("stage", false));
  size_t spans = 0;
  ASSERT_TRUE(testing::WaitFor([&] {
    spans = 0;
    for (const auto& r : collector.received()) {
      spans += nlohmann::json::parse(r.body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
    }
    return spans == 10;
  })) << spans;
  for (const auto& r : collector.received()) {
    EXPECT_EQ(r.path, "/v1/traces");
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
    EXPECT_NE(r.head.find("x-team: search"), std::string::npos) << r.head;
    EXPECT_EQ(OtlpJsonCheck::Problems(r.body), std::vector<std::string>());
    EXPECT_LE(nlohmann::json::parse(r.body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size(),
              4u);
  }
  EXPECT_GE(collector.received().size(), 3u);  // 10 spans, 4 a batch
  exporter.Stop();
  EXPECT_NE(metrics.Render().find("shoal_trace_spans_total{outcome=\"exported\"} 10"),
            std::string::npos)
      << metrics.Render();
}

TEST(SpanExporter, RetriesWhatTheProtocolCallsRetryableThenCountsItFailed) {
  const std::string unavailable =
      "HTTP/1.1 503 X\r\nRetry-After: 0\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  ScriptedHttpServer collector({{"/v1/traces", unavailable}});
  trace::ExporterOptions o = To(collector);
  o.interval = std::chrono::milliseconds(10);
  MetricsRegistry metrics;
  trace::SpanExporter exporter(o, metrics);
  exporter.Record(TestSpan("stage", false));
  ASSERT_TRUE(testing::WaitFor(
      [&] { return metrics.Render().find("outcome=\"failed\"} 1") != std::string::npos; }));
  EXPECT_EQ(collector.requests(), 3);  // the first try and two more
}

TEST(SpanExporter, AHungCollectorNeverBlocksRecordingAndStopIsBounded) {
  ScriptedHttpServer collector({{"/v1/traces", std::string(ScriptedHttpServer::kHang)}});
  trace::ExporterOptions o = To(collector);
  o.max_queue = 16;
  o.max_batch = 4;
  o.interval = std::chrono::milliseconds(10);
  o.timeout = std::chrono::seconds(60);  // longer than the test: only Stop may cut it
  o.stop_timeout = std::chrono::milliseconds(200);
  MetricsRegistry metrics;
  auto exporter = std::make_unique<trace::SpanExporter>(o, metrics);
  ASSERT_TRUE(testing::WaitFor([&] {
    exporter->Record(TestSpan("stage", false));
    return collector.requests() >= 1;  // a batch is stuck in a request
  }));
  // The queue fills while the request hangs; Record drops, never waits.
  for (int i = 0; i < 1000; ++i) exporter->Record(TestSpan("stage", false));
  EXPECT_NE(metrics.Render().find("outcome=\"dropped\"}"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  exporter->Stop();
  // Bounded by stop_timeout (not the 60 s request timeout); the bound is
  // generous only for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  const std::string text = metrics.Render();
  EXPECT_NE(text.find("shoal_trace_spans_total{outcome=\"exported\"} 0"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace shoal
