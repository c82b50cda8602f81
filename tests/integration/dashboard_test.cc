// The live dashboard (GET / on a gateway): its routes and their
// authorization, and the page itself in a real browser — headless Chromium
// against a running cluster (nats-server, a gateway, a worker with the
// identity runtime): the figures appear, change under load, and a
// screenshot is saved to <build>/tests/dashboard.png for people to look at.
//
// Chromium runs the page's JavaScript with --dump-dom; --virtual-time-budget
// lets its timers (the 2 s poll) fire before the DOM is written out. Start-up
// is slow on a small machine: the waits are generous and no timing is
// asserted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "admin/catalog_admin.h"
#include "common/subprocess.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

constexpr char kModel[] = "test/embed";
constexpr char kRequest[] = R"({"model":"test/embed","input":"one two three"})";

// `chromium` (Debian's name) or `chromium-browser`, from PATH.
std::optional<std::string> FindChromium() {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return std::nullopt;
}

// Headless Chromium, one run per call, with a profile of its own.
class Browser {
 public:
  Browser(std::string binary, std::string dir) : binary_(std::move(binary)), dir_(std::move(dir)) {}

  // The page's DOM once its scripts have run for 5 s of virtual time.
  Result<std::string> DumpDom(const std::string& url) {
    const std::string out = dir_ + "/dom-" + std::to_string(runs_) + ".html";
    SHOAL_RETURN_IF_ERROR(Run({"--dump-dom", url}, out));
    return FileText(out);
  }

  Status Screenshot(const std::string& url, const std::string& png) {
    return Run({"--window-size=1280,900", "--hide-scrollbars", "--screenshot=" + png, url},
               "/dev/null");
  }

 private:
  Status Run(const std::vector<std::string>& args, const std::string& stdout_path) {
    const std::string log = dir_ + "/chromium-" + std::to_string(runs_++) + ".log";
    // Through sh for the redirections (Subprocess sends both streams to one
    // log; the DOM must not mix with Chromium's chatter on stderr).
    std::string cmd =
        "exec '" + binary_ +
        "' --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
        " --disable-extensions --user-data-dir='" +
        dir_ + "/profile' --virtual-time-budget=5000";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " >'" + stdout_path + "' 2>'" + log + "'";
    auto p = Subprocess::Spawn({"sh", "-c", cmd});
    if (!p.ok()) return p.status();
    const auto deadline = SteadyClock::now() + std::chrono::seconds(120);
    while (p->Running()) {
      if (SteadyClock::now() > deadline) {
        p->Stop(SIGKILL, std::chrono::seconds(1));
        return Status(Code::kDeadlineExceeded,
                      "chromium ran over 120 s; its log: " + FileText(log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::Ok();
  }

  const std::string binary_, dir_;
  int runs_ = 0;
};

// The data-value of the element with data-figure="<name>" in a dumped DOM;
// empty when it has none (or there is no such element).
std::optional<double> Figure(const std::string& dom, const std::string& name) {
  const size_t at = dom.find("data-figure=\"" + name + "\"");
  if (at == std::string::npos) return std::nullopt;
  const size_t open = dom.rfind('<', at), close = dom.find('>', at);
  const std::string tag = dom.substr(open, close - open);
  const std::string key = "data-value=\"";
  const size_t v = tag.find(key);
  if (v == std::string::npos) return std::nullopt;
  const std::string value =
      tag.substr(v + key.size(), tag.find('"', v + key.size()) - v - key.size());
  if (value.empty()) return std::nullopt;
  return std::stod(value);
}

// Requests from a thread of its own until stopped.
class Load {
 public:
  explicit Load(int port)
      : thread_([this, port] {
          HttpClient http(port);
          while (!stop_) {
            auto r = http.PostJson("/v1/embeddings", kRequest);
            (r.ok() && r->status == 200 ? ok_ : failed_)++;
          }
        }) {}
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int ok() const { return ok_; }
  int failed() const { return failed_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, failed_{0};
  std::thread thread_;
};

TEST(Dashboard, PageIsOpenAndItsFiguresFollowTheClusterRoutesAuthorization) {
  TestCluster cluster;
  cluster.Register(IdentityProfile(kModel, "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers(kModel, 1);
  gateway::GatewayOptions options;
  options.admin_token = "dash-admin-token";
  auto gateway = cluster.StartGateway(options);
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());

  auto page = http.Get("/");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->Header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("data-figure=\"throughput\""), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos) << "no external assets";
  EXPECT_EQ(page->body.find("https://"), std::string::npos) << "no external assets";

  // The figures: like /v1/cluster, the admin token (the client is local, but
  // the gateway has a token, so it is needed).
  auto refused = http.Get("/v1/dashboard");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 401) << refused->body;
  const std::map<std::string, std::string> bearer = {{"Authorization", "Bearer dash-admin-token"}};
  auto figures = http.Request("GET", "/v1/dashboard", "", bearer);
  ASSERT_TRUE(figures.ok());
  ASSERT_EQ(figures->status, 200) << figures->body;
  json d = json::parse(figures->body);
  EXPECT_EQ(d["gateway"]["id"], gateway->id());
  EXPECT_EQ(d["gateway"]["period_ms"], 2000);
  EXPECT_EQ(d["totals"]["workers"], 1);
  EXPECT_EQ(d["totals"]["models_resident"], 1);
  ASSERT_EQ(d["cluster"]["workers"].size(), 1u);
  EXPECT_EQ(d["cluster"]["workers"][0]["id"], worker->id());
  // Its own polls (answered or refused) are not traffic it shows; the rest is.
  EXPECT_EQ(d["history"]["responses_total"], 0) << figures->body;
  auto models = http.Get("/v1/models");
  ASSERT_TRUE(models.ok() && models->status == 200);
  figures = http.Request("GET", "/v1/dashboard", "", bearer);
  ASSERT_TRUE(figures.ok() && figures->status == 200);
  EXPECT_EQ(json::parse(figures->body)["history"]["responses_total"], 1);
}

TEST(Dashboard, ShowsTheClusterAndItsTrafficInABrowser) {
  const auto chromium = FindChromium();
  if (!chromium)
    GTEST_SKIP()
        << "chromium is not installed (scripts/setup installs it): no browser to load the page";

  TestCluster cluster;
  cluster.Register(IdentityProfile(kModel, "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  ASSERT_TRUE(worker);
  cluster.WaitForWorkers(kModel, 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const std::string url = "http://127.0.0.1:" + std::to_string(gateway->port()) + "/";
  Browser browser(*chromium, cluster.dir());
  // A model registered as `shoal models add` does has versions: the
  // versions table shows them (registered beside the gateway, so that the
  // idle page shows no traffic).
  {
    auto admin = admin::CatalogAdmin::Connect(cluster.nats_url());
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    auto spec = ModelSpec::Parse("id: test/versioned\nruntime: identity\nidentity: {dim: 8}\n");
    ASSERT_TRUE(spec.ok());
    auto registered = admin->Register(*spec);
    ASSERT_TRUE(registered.ok()) << registered.status().ToString();
    // Its second version, shadowing the first on a tenth of its requests.
    spec->runtime_options_json = R"({"dim": 8, "us_per_batch": 1})";
    registered = admin->Register(*spec, {.candidate = true});
    ASSERT_TRUE(registered.ok()) << registered.status().ToString();
    auto canary = admin->StartCanary(
        "test/versioned", *CanarySpec::Parse(R"({"version": 2, "mode": "shadow", "fraction": 0.1})"),
        "test");
    ASSERT_TRUE(canary.ok()) << canary.status().ToString();
  }

  // Idle: the cluster is there, no traffic yet.
  auto idle = browser.DumpDom(url);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  ASSERT_NE(idle->find("data-worker=\"" + worker->id() + "\""), std::string::npos) << *idle;
  EXPECT_NE(idle->find("data-model=\"test/embed\""), std::string::npos);
  EXPECT_EQ(Figure(*idle, "workers"), 1) << *idle;
  EXPECT_GE(Figure(*idle, "executors").value_or(0), 1);
  EXPECT_EQ(Figure(*idle, "models"), 3) << "a kept version is an entry that loads apart";
  EXPECT_EQ(Figure(*idle, "models-resident"), 1);
  EXPECT_TRUE(Figure(*idle, "memory-used").has_value());
  EXPECT_TRUE(Figure(*idle, "backlog").has_value());
  EXPECT_EQ(Figure(*idle, "throughput"), 0);
  EXPECT_EQ(Figure(*idle, "responses-total"), 0);
  EXPECT_NE(idle->find("<path"), std::string::npos) << "the charts are drawn (an idle line at 0)";
  EXPECT_NE(idle->find("no batch jobs running"), std::string::npos) << "the batch jobs' table is drawn";
  EXPECT_NE(idle->find("data-model=\"test/versioned\" data-version=\"1\""), std::string::npos)
      << "the versions table shows the registered version";
  EXPECT_NE(idle->find("10.0 % of traffic, shadowed"), std::string::npos)
      << "and the shadow on the candidate";

  // Under load: wait until a sample of the gateway's history holds some of
  // it (the sampler closes an interval every 2 s), then look again while
  // the load goes on.
  Load load(gateway->port());
  HttpClient http(gateway->port());
  const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  double last_rps = 0;
  while (SteadyClock::now() < deadline && (load.ok() < 300 || last_rps == 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto r = http.Get("/v1/dashboard");
    ASSERT_TRUE(r.ok() && r->status == 200);
    const json samples = json::parse(r->body)["history"]["samples"];
    last_rps = samples.empty() ? 0 : samples.back()["rps"].get<double>();
  }
  ASSERT_GE(load.ok(), 300) << load.failed() << " failed";
  ASSERT_GT(last_rps, 0);

  auto busy = browser.DumpDom(url);
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  const auto throughput = Figure(*busy, "throughput");
  ASSERT_TRUE(throughput.has_value()) << *busy;
  EXPECT_GT(*throughput, 0);
  EXPECT_NE(throughput, Figure(*idle, "throughput"));
  EXPECT_GE(Figure(*busy, "responses-total").value_or(0), 300);
  EXPECT_GT(Figure(*busy, "p50").value_or(0), 0) << "a latency, in ms";
  EXPECT_GE(Figure(*busy, "p99").value_or(0), Figure(*busy, "p50").value_or(0));
  EXPECT_NE(busy->find("data-worker=\"" + worker->id() + "\""), std::string::npos);

  // The screenshot, for people (docs/operations.md shows one).
  const std::string png = std::string(SHOAL_TEST_OUTPUT_DIR) + "/dashboard.png";
  std::remove(png.c_str());
  Status shot = browser.Screenshot(url, png);
  load.Stop();
  ASSERT_TRUE(shot.ok()) << shot.ToString();
  const std::string image = FileText(png);
  ASSERT_GT(image.size(), 1000u) << png;
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png << " is not a PNG";
  // IHDR: width and height, big-endian, at bytes 16 and 20.
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(image[at])) << 24) | (uint32_t(uint8_t(image[at + 1])) << 16) |
           (uint32_t(uint8_t(image[at + 2])) << 8) | uint32_t(uint8_t(image[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);
  EXPECT_EQ(be32(20), 900u);
  std::cout << "dashboard screenshot: " << png << "\n";
}

}  // namespace
}  // namespace shoal::testing
