#include "runtime/upstream/sse_reader.h"

namespace shoal::upstream {

Status SseReader::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      std::string line;
      line.swap(line_);
      SHOAL_RETURN_IF_ERROR(Line(line));
      continue;
    }
    if (line_.size() >= kMaxLine) {
      return Status(Code::kInferenceError,
                    "upstream stream is not server-sent events (a line over " + std::to_string(kMaxLine) + " bytes)");
    }
    line_.push_back(c);
  }
  return Status::Ok();
}

Status SseReader::Line(std::string_view line) {
  if (line.empty()) {  // the event ends
    if (!has_data_) return Status::Ok();
    std::string data;
    data.swap(data_);
    has_data_ = false;
    return on_event_(data);
  }
  if (line.front() == ':') return Status::Ok();  // a comment
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return Status::Ok();  // event, id, retry: nothing an OpenAI stream needs
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
  return Status::Ok();
}

}  // namespace shoal::upstream
