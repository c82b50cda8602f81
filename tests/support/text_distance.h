// How far a text read (OCR) is from the text written: edit distance over
// Unicode code points, and the share of characters right that follows.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace shoal::testing {

// The code points of UTF-8 text; spaces left out unless `spaces`.
inline std::u32string CodePoints(const std::string& s, bool spaces = true) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (spaces || cp != U' ') out.push_back(cp);
    i += n;
  }
  return out;
}

// Levenshtein: insertions, deletions and substitutions, one each.
inline size_t EditDistance(const std::u32string& a, const std::u32string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// 1 − distance / the written text's length.
inline double CharacterAccuracy(const std::string& written, const std::string& read, bool spaces = true) {
  const std::u32string a = CodePoints(written, spaces), b = CodePoints(read, spaces);
  return a.empty() ? 1.0 : 1.0 - static_cast<double>(EditDistance(a, b)) / static_cast<double>(a.size());
}

}  // namespace shoal::testing
