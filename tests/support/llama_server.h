// llama-server, llama.cpp's OpenAI-compatible server, built from the source
// node-llama-cpp ships (scripts/build-llama-server, a cached test-only build
// step): the real upstream of the upstream runtime's tests and benchmark.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace shoal::testing {

class LlamaServer {
 public:
  // Where the build step puts it (empty when it is not built: tests skip).
  static std::string Binary();

  // Starts it on `gguf` on a free loopback port, serving it as `alias`,
  // with `args` besides (e.g. --embeddings), and waits until /health says
  // the model is loaded; fails the test on error. `log` gets its output.
  LlamaServer(const std::string& gguf, const std::string& alias, const std::vector<std::string>& args,
              const std::string& log);

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

  // SIGKILL, and (Restart) the same command on the same port again.
  void Kill();
  void Restart();

 private:
  void Start();

  std::vector<std::string> argv_;
  std::string log_;
  int port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace shoal::testing
