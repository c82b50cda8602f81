#include "runtime/llamacpp/llamacpp_backend.h"

#include <ggml-backend.h>
#include <llama.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace shoal::llamacpp {
namespace {

constexpr size_t kKeptLines = 4;

thread_local LogCapture* current_capture = nullptr;
// llama.cpp writes a line in pieces (GGML_LOG_LEVEL_CONT continues one);
// it is assembled per thread and logged whole.
thread_local std::string partial_line;
thread_local ggml_log_level partial_level = GGML_LOG_LEVEL_DEBUG;

void OnLog(ggml_log_level level, const char* text, void*) {
  if (level != GGML_LOG_LEVEL_CONT) partial_level = level;
  partial_line += text ? text : "";
  if (partial_line.empty() || partial_line.back() != '\n') return;
  partial_line.pop_back();
  std::string line = std::move(partial_line);
  partial_line.clear();
  // llama.cpp is chatty at info level (every load prints its tensors):
  // all of it is debug here, so a worker's log stays Shoal's.
  spdlog::debug("llama.cpp: {}", line);
  if (current_capture && (partial_level == GGML_LOG_LEVEL_ERROR || partial_level == GGML_LOG_LEVEL_WARN)) {
    current_capture->Add(std::move(line));
  }
}

}  // namespace

void InitBackend() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(OnLog, nullptr);
    ggml_backend_load_all_from_path(SHOAL_LLAMACPP_LIB_DIR);
    llama_backend_init();
  });
}

LogCapture::LogCapture() : previous_(current_capture) { current_capture = this; }
LogCapture::~LogCapture() { current_capture = previous_; }

void LogCapture::Add(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (line.empty()) return;
  if (lines_.size() == kKeptLines) lines_.erase(lines_.begin());
  lines_.push_back(std::move(line));
}

std::string LogCapture::Reason() const {
  std::string out;
  for (const std::string& l : lines_) out += (out.empty() ? "" : "; ") + l;
  return out;
}

}  // namespace shoal::llamacpp
