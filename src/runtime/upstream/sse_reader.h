// Server-sent events (the WHATWG "text/event-stream" format), read
// incrementally: bytes in as they arrive, each event's data out when its
// blank line comes. Only `data:` fields matter to an OpenAI stream; comments
// (`:` lines, keep-alives) and the other fields are skipped.
//
// Threading: one reader per stream, used by one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::upstream {

class SseReader {
 public:
  // Called with each event's data (its data lines joined by '\n'); a
  // non-ok return stops the reading and is what Feed returns.
  using OnEvent = std::function<Status(std::string_view data)>;

  explicit SseReader(OnEvent on_event) : on_event_(std::move(on_event)) {}

  // The next bytes of the stream. INFERENCE_ERROR when a line grows past
  // kMaxLine (a stream that is not SSE), or the handler's error.
  Status Feed(std::string_view bytes);

  // Whether bytes of an unfinished event are buffered (a stream cut short).
  bool pending() const { return !line_.empty() || has_data_; }

  static constexpr size_t kMaxLine = 8 << 20;

 private:
  Status Line(std::string_view line);

  OnEvent on_event_;
  std::string line_;  // the current line, without its end
  std::string data_;  // the current event's data
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was a CR (a CRLF's LF is not a second line end)
};

}  // namespace shoal::upstream
