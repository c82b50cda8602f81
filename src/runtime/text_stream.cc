#include "runtime/text_stream.h"

#include <algorithm>

namespace shoal {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes in the UTF-8 sequence that `lead` starts; 0 when it cannot start one.
int SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether s[1..n) are valid continuation bytes for the lead s[0] (with the
// second-byte ranges that exclude overlongs and surrogates).
bool ValidTail(std::string_view s, int n) {
  const auto b = [&](int i) { return static_cast<unsigned char>(s[i]); };
  for (int i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return false;
  }
  if (n >= 2) {
    if (b(0) == 0xE0 && b(1) < 0xA0) return false;
    if (b(0) == 0xED && b(1) > 0x9F) return false;
    if (b(0) == 0xF0 && b(1) < 0x90) return false;
    if (b(0) == 0xF4 && b(1) > 0x8F) return false;
  }
  return true;
}

}  // namespace

int Utf8Pending(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const int n = SequenceLength(static_cast<unsigned char>(bytes[i]));
    if (n == 0) return -1;
    const size_t have = std::min<size_t>(n, bytes.size() - i);
    if (!ValidTail(bytes.substr(i, have), static_cast<int>(have))) return -1;
    if (have < static_cast<size_t>(n)) return n - static_cast<int>(have);
    i += n;
  }
  return 0;
}

TextStream::TextStream(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

void TextStream::Decode(bool final) {
  size_t i = 0;
  while (i < raw_.size()) {
    const int n = SequenceLength(static_cast<unsigned char>(raw_[i]));
    if (n == 0) {
      text_ += kReplacement;
      ++i;
      continue;
    }
    const size_t have = std::min<size_t>(n, raw_.size() - i);
    // A prefix that is still valid may complete with the next token.
    if (!ValidTail(std::string_view(raw_).substr(i, have), static_cast<int>(have))) {
      text_ += kReplacement;
      ++i;
      continue;
    }
    if (have < static_cast<size_t>(n)) {
      if (!final) break;
      text_ += kReplacement;
      i = raw_.size();
      break;
    }
    text_.append(raw_, i, n);
    i += n;
  }
  raw_.erase(0, i);
}

std::string TextStream::Release() {
  // A stop string inside the text: send what precedes it, and stop.
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) cut = std::min(cut, text_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = text_.substr(0, cut);
    text_.clear();
    raw_.clear();
    return out;
  }
  // Hold back the longest tail that begins some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k) {
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  std::string out = text_.substr(0, text_.size() - hold);
  text_.erase(0, text_.size() - hold);
  return out;
}

std::string TextStream::Push(std::string_view bytes) {
  if (stopped_) return {};
  raw_.append(bytes);
  Decode(false);
  return Release();
}

std::string TextStream::Finish() {
  if (stopped_) return {};
  Decode(true);
  std::string out = Release();
  if (stopped_) return out;
  out += text_;  // a stop prefix that never completed is text after all
  text_.clear();
  return out;
}

}  // namespace shoal
