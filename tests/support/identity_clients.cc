#include "support/identity_clients.h"

#include <nlohmann/json.hpp>

#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"

namespace shoal::testing {

IdentityClients::IdentityClients(int port, std::string model, int threads, int per_thread)
    : total_(threads * per_thread) {
  for (int t = 0; t < threads; ++t) {
    threads_.emplace_back([this, port, model, t, per_thread] {
      HttpClient http(port);
      for (int i = 0; i < per_thread; ++i) {
        const std::string text = "t" + std::to_string(t) + " i" + std::to_string(i);
        auto res = http.PostJson("/v1/embeddings", R"({"model":")" + model + R"(","input":")" + text + R"("})");
        ++done_;
        if (!res.ok() || res->status != 200) {
          std::lock_guard lock(mu_);
          failures_.push_back(res.ok() ? res->body : res.status().ToString());
          continue;
        }
        auto v = nlohmann::json::parse(res->body)["data"][0]["embedding"].get<std::vector<float>>();
        if (v == IdentityVector(IdentityTokens(text), 8, true)) ++correct_;
        if (res->Header("x-shoal-attempts") != "1") ++retried_;
      }
    });
  }
}

void IdentityClients::Join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace shoal::testing
