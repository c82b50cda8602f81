// TLS at both edges, against a real nats-server: the gateway serving HTTPS
// (plain and streamed responses; plain HTTP to its port gets nothing), and
// NATS over TLS with a user and password for every connection of a worker
// and a gateway — with misconfiguration failing at start, never falling
// back to plaintext. Certificates are made per test run by the openssl CLI:
// a throwaway CA and a server certificate for 127.0.0.1 signed by it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/fake_generator.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/tls_client.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

struct Certs {
  std::string dir, ca, cert, key;
};

// A CA and a server certificate (names localhost and 127.0.0.1) in `dir`.
Certs MakeCerts(const std::string& dir) {
  std::filesystem::create_directories(dir);
  Certs c{dir, dir + "/ca.pem", dir + "/server.pem", dir + "/server.key"};
  const std::string script =
      "cd '" + dir + "' && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=shoal-test-ca && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost && "
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.cnf && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem "
      "-days 1 -extfile san.cnf";
  EXPECT_EQ(std::system(("(" + script + ") >'" + dir + "/openssl.log' 2>&1").c_str()), 0)
      << "openssl failed; see " << dir << "/openssl.log";
  return c;
}

std::string TempDir() {
  char tmpl[] = "/tmp/shoal-tls-XXXXXX";
  return mkdtemp(tmpl);
}

constexpr char kEncodeBody[] = R"({"items":[{"text":"a b c"}]})";

// HTTPS at the gateway; NATS plain (TestCluster's default).
class HttpsGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = MakeCerts(TempDir());
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    worker_ = cluster_.StartWorker();
    ASSERT_TRUE(worker_);
    cluster_.WaitForWorkers("test/embed", 1);
    gateway::GatewayOptions o;
    o.http.tls_cert_file = certs_.cert;
    o.http.tls_key_file = certs_.key;
    gateway_ = cluster_.StartGateway(o);
    ASSERT_TRUE(gateway_);
  }
  void TearDown() override { std::filesystem::remove_all(certs_.dir); }

  Certs certs_;
  TestCluster cluster_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

TEST_F(HttpsGatewayTest, AnswersOverHttps) {
  auto health = HttpsRequest(gateway_->port(), certs_.ca, "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.status().ToString();
  EXPECT_EQ(health->status, 200) << health->body;

  auto res = HttpsRequest(gateway_->port(), certs_.ca, "POST", "/v1/encode/test/embed", kEncodeBody,
                          {{"Content-Type", "application/json"}});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["items"][0]["dense"].size(), 8u);
}

TEST_F(HttpsGatewayTest, PlainHttpToTheTlsPortGetsNoAnswer) {
  HttpClient http(gateway_->port(), 5000);
  auto res = http.Get("/healthz");
  EXPECT_TRUE(!res.ok() || res->status != 200);
  // The port still serves TLS afterwards.
  auto ok = HttpsRequest(gateway_->port(), certs_.ca, "GET", "/healthz");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpsGatewayTest, AClientThatDoesNotTrustTheCaFailsTheHandshake) {
  const Certs other = MakeCerts(certs_.dir + "/other");
  auto res = HttpsRequest(gateway_->port(), other.ca, "GET", "/healthz");
  EXPECT_FALSE(res.ok());
}

// Generation over HTTPS; the test plays the worker (fake_generator.h).
class HttpsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string profile = IdentityProfile(
        "test/gen",
        "task: generate\nmemory_bytes: 1000\npinned: false\nqueue: {ack_wait_ms: 1000, max_deliver: 5}\n");
    cluster_.Register(profile);
    auto spec = ModelSpec::Parse(profile);
    ASSERT_TRUE(spec.ok());
    generator_ = std::make_unique<FakeGenerator>(cluster_, *spec);
    gateway::GatewayOptions o;
    o.http.tls_cert_file = certs_.cert;
    o.http.tls_key_file = certs_.key;
    gw_ = cluster_.StartGateway(o);
    ASSERT_TRUE(gw_);
    // The gateway queues only what some worker serves: wait for the heartbeat.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (bool serving = false; !serving;) {
      auto models = HttpsRequest(gw_->port(), certs_.ca, "GET", "/v1/models");
      ASSERT_TRUE(models.ok()) << models.status().ToString();
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "the gateway never saw the generator: " << models->body;
      const json list = json::parse(models->body);
      for (const auto& m : list["data"]) {
        if (m["id"] == "test/gen") serving = m["shoal"]["serving"].get<bool>();
      }
      if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  void TearDown() override { std::filesystem::remove_all(certs_.dir); }

  // A TLS connection with a streamed generation asked for on it, and that
  // generation's work as the worker sees it; null (a failure) on error.
  std::unique_ptr<TlsConnection> OpenStream(FakeGenerator::Work* work) {
    auto conn = TlsConnection::Open(gw_->port(), certs_.ca);
    if (!conn.ok()) {
      ADD_FAILURE() << conn.status().ToString();
      return nullptr;
    }
    if (Status s = (*conn)->Send("POST", "/v1/generate/test/gen", R"({"prompt":"p","stream":true})",
                                 {{"Content-Type", "application/json"}});
        !s.ok()) {
      ADD_FAILURE() << s.ToString();
      return nullptr;
    }
    *work = generator_->Take();
    return std::move(conn).value();
  }

  Certs certs_ = MakeCerts(TempDir());
  TestCluster cluster_;
  std::unique_ptr<FakeGenerator> generator_;
  std::unique_ptr<gateway::Gateway> gw_;
};

TEST_F(HttpsStreamTest, AStreamedResponseArrivesWholeOverTls) {
  FakeGenerator& generator = *generator_;
  FakeGenerator::Work w;
  auto conn = OpenStream(&w);
  ASSERT_TRUE(conn);
  constexpr int kChunks = 20;
  for (int i = 0; i < kChunks; ++i) {
    wire::GenerationChunk c;
    c.text = std::to_string(i) + " ";
    c.token_ids = {i};
    const bool last = i + 1 == kChunks;
    if (last) c.finish = wire::FinishReason::kLength;
    generator.Send(w, i, c, last);
  }
  auto res = conn->ReadResponse();
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->Header("content-type"), "text/event-stream");
  std::string text;
  size_t events = 0;
  for (size_t pos = res->body.find("data: "); pos != std::string::npos; pos = res->body.find("data: ", pos)) {
    pos += 6;
    const std::string data = res->body.substr(pos, res->body.find('\n', pos) - pos);
    ++events;
    if (data != "[DONE]") text += json::parse(data)["text"].get<std::string>();
  }
  EXPECT_EQ(events, kChunks + 1u);
  std::string want;
  for (int i = 0; i < kChunks; ++i) want += std::to_string(i) + " ";
  EXPECT_EQ(text, want);
}

// The hang-up watch over TLS: a client that goes away mid-stream (here
// without a close_notify, as a killed one would) cancels its generation.
TEST_F(HttpsStreamTest, AClientHangingUpMidStreamCancelsTheGeneration) {
  FakeGenerator::Work w;
  auto conn = OpenStream(&w);
  ASSERT_TRUE(conn);
  wire::GenerationChunk c;
  c.text = "first ";
  c.token_ids = {1};
  generator_->Send(w, 0, c, false);
  conn.reset();  // hangs up
  const std::string notice = generator_->NextCancel();
  EXPECT_EQ(notice.substr(0, notice.find(' ')), w.request_id) << notice;
}

// The same for a client that says goodbye first: its close_notify arrives
// as bytes ahead of the FIN, which must not pass for a pipelined request.
TEST_F(HttpsStreamTest, AClientClosingPolitelyMidStreamCancelsTheGeneration) {
  FakeGenerator::Work w;
  auto conn = OpenStream(&w);
  ASSERT_TRUE(conn);
  wire::GenerationChunk c;
  c.text = "first ";
  c.token_ids = {1};
  generator_->Send(w, 0, c, false);
  auto got = conn->ReadSome();  // the head at least: the stream is on
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_NE(got->find("200"), std::string::npos) << *got;
  conn->CloseGracefully();
  const std::string notice = generator_->NextCancel();
  EXPECT_EQ(notice.substr(0, notice.find(' ')), w.request_id) << notice;
}

TEST(HttpsStartTest, AMissingOrBadCertificateIsAStartupErrorNamingTheFile) {
  const std::string dir = TempDir();
  const Certs certs = MakeCerts(dir);
  std::ofstream(dir + "/garbage.pem") << "not a certificate\n";
  TestCluster cluster;
  const std::pair<std::string, std::string> cases[] = {
      {dir + "/missing.pem", certs.key},
      {certs.cert, dir + "/missing.key"},
      {dir + "/garbage.pem", certs.key},
      {certs.cert, dir + "/garbage.pem"},
      {certs.cert, dir + "/ca.key"},  // a key of another certificate
  };
  for (const auto& [cert, key] : cases) {
    gateway::GatewayOptions o;
    o.nats_url = cluster.nats_url();
    o.http.port = 0;
    o.http.tls_cert_file = cert;
    o.http.tls_key_file = key;
    auto gw = gateway::Gateway::Start(o);
    ASSERT_FALSE(gw.ok()) << cert << " / " << key;
    const std::string& message = gw.status().message();
    EXPECT_TRUE(message.find(cert) != std::string::npos || message.find(key) != std::string::npos)
        << message;
  }
  std::filesystem::remove_all(dir);
}

// NATS with TLS and a user: every connection of a worker and a gateway must
// bring the CA and the password.
class SecureNatsTest : public ::testing::Test {
 protected:
  static SecureNats Secure(const Certs& c) {
    SecureNats s;
    s.tls_cert_file = c.cert;
    s.tls_key_file = c.key;
    s.users = {{"shoal", "s3cret pass"}};
    s.client.ca_file = c.ca;
    s.client.user = "shoal";
    s.client.password = "s3cret pass";
    return s;
  }
  void TearDown() override { std::filesystem::remove_all(certs_.dir); }

  Certs certs_ = MakeCerts(TempDir());
  TestCluster cluster_{Secure(certs_)};
};

TEST_F(SecureNatsTest, AnEncodeRequestFlowsEndToEnd) {
  ASSERT_EQ(cluster_.nats_url().rfind("tls://", 0), 0u) << cluster_.nats_url();
  cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  auto worker = cluster_.StartWorker();  // with the cluster's CA and credentials
  ASSERT_TRUE(worker);
  cluster_.WaitForWorkers("test/embed", 1);
  gateway::GatewayOptions o;
  o.http.tls_cert_file = certs_.cert;  // and HTTPS in front, for good measure
  o.http.tls_key_file = certs_.key;
  auto gw = cluster_.StartGateway(o);
  ASSERT_TRUE(gw);
  for (int i = 0; i < 3; ++i) {  // more than one lane's connection
    auto res = HttpsRequest(gw->port(), certs_.ca, "POST", "/v1/encode/test/embed", kEncodeBody,
                            {{"Content-Type", "application/json"}});
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(json::parse(res->body)["items"][0]["dense"].size(), 8u);
  }
}

TEST_F(SecureNatsTest, AWrongPasswordIsAStartupError) {
  worker::WorkerOptions wo;
  wo.nats_url = cluster_.nats_url();
  wo.nats_security = {.ca_file = certs_.ca, .user = "shoal", .password = "wrong"};
  auto w = worker::Worker::Start(wo);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("Authorization"), std::string::npos) << w.status().ToString();

  gateway::GatewayOptions go;
  go.nats_url = cluster_.nats_url();
  go.nats_security = wo.nats_security;
  go.http.port = 0;
  auto g = gateway::Gateway::Start(go);
  EXPECT_FALSE(g.ok());
}

TEST_F(SecureNatsTest, NoCaForATlsServerIsAStartupError) {
  worker::WorkerOptions wo;
  wo.nats_url = cluster_.nats_url();
  wo.nats_security = {.user = "shoal", .password = "s3cret pass"};
  auto w = worker::Worker::Start(wo);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("SSL"), std::string::npos) << w.status().ToString();
  // Even with nats:// the server's TLS is required, and still unverifiable.
  wo.nats_url = "nats://127.0.0.1:" + cluster_.nats_url().substr(cluster_.nats_url().rfind(':') + 1);
  EXPECT_FALSE(worker::Worker::Start(wo).ok());
}

TEST(NatsTlsTest, ACaForAPlainServerIsAnErrorNotAPlaintextFallback) {
  const Certs certs = MakeCerts(TempDir());
  TestCluster cluster;  // no TLS
  worker::WorkerOptions wo;
  wo.nats_url = cluster.nats_url();
  wo.nats_security.ca_file = certs.ca;
  auto w = worker::Worker::Start(wo);
  EXPECT_FALSE(w.ok());
  // And a CA file that does not exist is named.
  wo.nats_security.ca_file = certs.dir + "/nope.pem";
  w = worker::Worker::Start(wo);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("nope.pem"), std::string::npos) << w.status().ToString();
  std::filesystem::remove_all(certs.dir);
}

}  // namespace
}  // namespace shoal::testing
