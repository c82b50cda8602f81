// The llama.cpp library as a process-wide resource: its CPU backends loaded
// (the libggml-cpu-<isa>.so that fits this machine, picked at run time from
// the prebuilt bundle's directory), its log routed to spdlog, and the
// errors a load logs captured so a failed load can say why.
//
// Threading: InitBackend is idempotent and thread-safe (once per process).
// A LogCapture collects the warnings and errors llama.cpp logs on the
// thread that made it, while it lives (llama.cpp loads a model on the
// calling thread); other threads' lines go to spdlog only.
#pragma once

#include <string>
#include <vector>

namespace shoal::llamacpp {

// Loads the backends and installs the log callback, once.
void InitBackend();

class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The last warning and error lines, joined with "; " (empty when none).
  std::string Reason() const;

  void Add(std::string line);

 private:
  LogCapture* previous_;
  std::vector<std::string> lines_;  // the last few
};

}  // namespace shoal::llamacpp
