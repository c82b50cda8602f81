#include "ocr/recognition.h"

#include <algorithm>
#include <fstream>

namespace shoal::ocr {

Result<Charset> Charset::Load(const std::string& path, bool space) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(path + ": cannot be read");
  std::vector<std::string> characters;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    characters.push_back(std::move(line));
  }
  if (characters.empty()) return InvalidInput(path + ": no characters");
  return FromCharacters(std::move(characters), space);
}

Charset Charset::FromCharacters(std::vector<std::string> characters, bool space) {
  Charset c;
  c.classes_.reserve(characters.size() + 2);
  c.classes_.emplace_back();  // the blank
  for (std::string& ch : characters) c.classes_.push_back(std::move(ch));
  if (space) c.classes_.emplace_back(" ");
  return c;
}

Result<RecognizedText> CtcDecode(std::span<const float> top1, const Charset& charset) {
  RecognizedText out;
  double sum = 0;
  size_t kept = 0, previous = 0;
  for (size_t t = 0; 2 * t + 1 < top1.size(); ++t) {
    const float p = top1[2 * t], index = top1[2 * t + 1];
    if (!(index >= 0 && index < static_cast<float>(charset.size()))) {
      return Status(Code::kInferenceError, "ocr: the recognizer's class " + std::to_string(index) +
                                               " is not one of its " + std::to_string(charset.size()) + " keys");
    }
    const auto best = static_cast<size_t>(index);
    if (best != 0 && (t == 0 || best != previous)) {
      out.text += charset.at(best);
      sum += p;
      ++kept;
    }
    previous = best;
  }
  out.confidence = kept == 0 ? 0.0f : static_cast<float>(sum / kept);
  return out;
}

}  // namespace shoal::ocr
