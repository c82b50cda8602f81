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

RecognizedText CtcDecode(std::span<const float> probs, size_t steps, const Charset& charset) {
  RecognizedText out;
  const size_t C = charset.size();
  if (C == 0 || probs.size() < steps * C) return out;
  double sum = 0;
  size_t kept = 0, previous = 0;
  for (size_t t = 0; t < steps; ++t) {
    const float* row = probs.data() + t * C;
    const size_t best = static_cast<size_t>(std::max_element(row, row + C) - row);
    if (best != 0 && (t == 0 || best != previous)) {
      out.text += charset.at(best);
      sum += row[best];
      ++kept;
    }
    previous = best;
  }
  out.confidence = kept == 0 ? 0.0f : static_cast<float>(sum / kept);
  return out;
}

}  // namespace shoal::ocr
