#include "support/llama_server.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "support/http_client.h"
#include "support/wait.h"

namespace shoal::testing {

std::string LlamaServer::Binary() {
  const std::string path = SHOAL_LLAMA_SERVER;
  return std::filesystem::exists(path) ? path : "";
}

LlamaServer::LlamaServer(const std::string& gguf, const std::string& alias, const std::vector<std::string>& args,
                         const std::string& log)
    : log_(log) {
  auto port = FreeLoopbackPort();
  if (!port.ok()) {
    ADD_FAILURE() << port.status().ToString();
    return;
  }
  argv_ = {Binary(), "-m", gguf, "--alias", alias, "--host", "127.0.0.1", "--port", std::to_string(*port),
           "--threads", "1", "--no-webui"};
  argv_.insert(argv_.end(), args.begin(), args.end());
  port_ = *port;
  Start();
}

void LlamaServer::Start() {
  auto p = Subprocess::Spawn(argv_, log_);
  if (!p.ok()) {
    ADD_FAILURE() << p.status().ToString();
    port_ = 0;
    return;
  }
  process_ = std::make_unique<Subprocess>(std::move(p).value());
  // 503 while the model loads, 200 once it serves.
  const bool up = WaitFor([&] {
    HttpClient http(port_, 1000);
    auto r = http.Get("/health");
    return r.ok() && r->status == 200;
  }, std::chrono::seconds(60));
  if (!up) {
    ADD_FAILURE() << "llama-server did not come up; see " << log_;
    port_ = 0;
  }
}

void LlamaServer::Kill() {
  if (process_) process_->Stop(SIGKILL, std::chrono::milliseconds(0));
}

void LlamaServer::Restart() {
  Kill();
  Start();
}

}  // namespace shoal::testing
