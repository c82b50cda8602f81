// The tokenizer's Unicode against the Unicode Consortium's own data, as
// Debian's `unicode-data` package installs it (Unicode 15.0, the version of
// Debian's utf8proc), in UNICODE_DATA_DIR:
//   NormalizationTest.txt  every line's five columns satisfy the invariants
//                          its header states, for NFC, NFD, NFKC and NFKD
//                          (through NormalizedString, with its alignment);
//                          every code point Part 1 does not list is its own
//                          normal form in all four
//   UnicodeData.txt        the general categories behind the character
//                          classes, and the simple lowercase mappings
//   SpecialCasing.txt      the unconditional full lowercase mappings
//   PropList.txt           White_Space
// The files are an independent reference: Shoal answers from utf8proc's
// tables and its own segmenting, never from these files. The conformance
// file has no pair like ｶﾞ whose second character composes with the first
// only after a compatibility decomposition, so the segmenting is also held
// to utf8proc's normalization of the whole string, for every character that
// decomposes or combines beside characters it may compose or reorder with.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <utf8proc.h>

#include "runtime/native/tokenizers/normalized_string.h"
#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native::testing {
namespace {

using tok::NormalizedString;
using tok::UnicodeForm;

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// The lines of a data file without comments and blank lines, read as it is
// or through bzip2 where Debian ships it compressed (NormalizationTest.txt);
// fails the test when the file is missing (scripts/setup installs
// `unicode-data`).
std::vector<std::string> DataLines(const char* name) {
  const std::string path = std::string(UNICODE_DATA_DIR) + "/" + name;
  std::string text;
  if (std::ifstream in(path); in.good()) {
    text.assign(std::istreambuf_iterator<char>(in), {});
  } else if (FILE* bz = popen(("bzip2 -dc '" + path + ".bz2' 2>/dev/null").c_str(), "r")) {
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, bz)) > 0;) text.append(buf, n);
    pclose(bz);
  }
  EXPECT_FALSE(text.empty()) << path << " (or .bz2) is missing: scripts/setup installs Debian's unicode-data";
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ';');) out.push_back(f);
  return out;
}

std::string Trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<uint32_t> CodePoints(const std::string& field) {
  std::vector<uint32_t> out;
  std::stringstream ss(field);
  for (std::string hex; ss >> hex;) out.push_back(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
  return out;
}

std::string Utf8(const std::vector<uint32_t>& cps) {
  std::string s;
  for (uint32_t cp : cps) tok::AppendUtf8(s, cp);
  return s;
}

std::string Hex(const std::string& utf8) {
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    int len;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%04X", out.empty() ? "" : " ", tok::DecodeUtf8(utf8, i, &len));
    out += buf;
    i += len;
  }
  return out;
}

// `text` in `form`, checking on the way that every output byte maps back into
// the input and that the mapping never runs backwards.
std::string Normalize(const std::string& text, UnicodeForm form) {
  NormalizedString s(text, 0);
  s.UnicodeNormalize(form);
  uint32_t last_start = 0;
  for (uint32_t i = 0; i < s.text().size(); ++i) {
    const tok::Range r = s.Original(i, i + 1);
    if (r.end > text.size() || r.start > r.end || r.start < last_start) {
      ADD_FAILURE() << "byte " << i << " of the output of " << Hex(text) << " maps to [" << r.start << ", "
                    << r.end << ")";
      break;
    }
    last_start = r.start;
  }
  return s.text();
}

const char* Name(UnicodeForm f) {
  switch (f) {
    case UnicodeForm::kNFC: return "NFC";
    case UnicodeForm::kNFD: return "NFD";
    case UnicodeForm::kNFKC: return "NFKC";
    case UnicodeForm::kNFKD: return "NFKD";
  }
  return "?";
}

TEST(UnicodeConformance, HalfwidthKatakanaWithVoicedMarkRecomposesUnderNfkc) {
  // ｶﾞ (U+FF76 U+FF9E): NFKC is ガ (U+30AC), as Python, ICU and HF tokenizers give.
  EXPECT_EQ(Hex(Normalize(Utf8({0xFF76, 0xFF9E}), UnicodeForm::kNFKC)), "30AC");
  EXPECT_EQ(Hex(Normalize(Utf8({0xFF76, 0xFF9E}), UnicodeForm::kNFKD)), "30AB 3099");
  EXPECT_EQ(Hex(Normalize(Utf8({0xFF76, 0xFF9E}), UnicodeForm::kNFC)), "FF76 FF9E");
}

TEST(UnicodeConformance, EveryLineOfNormalizationTestHoldsItsInvariants) {
  // c2 == NFC(c1..c3),  c4 == NFC(c4) == NFC(c5)
  // c3 == NFD(c1..c3),  c5 == NFD(c4) == NFD(c5)
  // c4 == NFKC(c1..c5), c5 == NFKD(c1..c5)
  struct Rule {
    UnicodeForm form;
    int expected;            // column, from 1
    std::vector<int> from;   // columns
  };
  const std::vector<Rule> rules = {
      {UnicodeForm::kNFC, 2, {1, 2, 3}}, {UnicodeForm::kNFC, 4, {4, 5}},
      {UnicodeForm::kNFD, 3, {1, 2, 3}}, {UnicodeForm::kNFD, 5, {4, 5}},
      {UnicodeForm::kNFKC, 4, {1, 2, 3, 4, 5}}, {UnicodeForm::kNFKD, 5, {1, 2, 3, 4, 5}},
  };
  size_t lines = 0, failures = 0;
  for (const std::string& line : DataLines("NormalizationTest.txt")) {
    if (line[0] == '@') continue;  // @Part headers
    const std::vector<std::string> f = Fields(line);
    ASSERT_GE(f.size(), 5u) << line;
    std::string col[6];
    for (int c = 1; c <= 5; ++c) col[c] = Utf8(CodePoints(f[c - 1]));
    ++lines;
    for (const Rule& r : rules) {
      for (int c : r.from) {
        const std::string got = Normalize(col[c], r.form);
        if (got == col[r.expected]) continue;
        if (++failures <= 20) {
          ADD_FAILURE() << Name(r.form) << "(c" << c << " = " << Hex(col[c]) << ") gave " << Hex(got)
                        << ", expected c" << r.expected << " = " << Hex(col[r.expected]);
        }
      }
    }
  }
  EXPECT_GT(lines, 19000u) << "NormalizationTest.txt is shorter than Unicode 15's";
  EXPECT_EQ(failures, 0u);
}

TEST(UnicodeConformance, EveryCodePointPartOneDoesNotListIsItsOwnNormalForm) {
  std::vector<bool> listed(kMaxCodePoint + 1, false);
  bool in_part1 = false;
  for (const std::string& line : DataLines("NormalizationTest.txt")) {
    if (line[0] == '@') {
      in_part1 = line.rfind("@Part1", 0) == 0;
      continue;
    }
    if (in_part1) listed[CodePoints(Fields(line)[0]).at(0)] = true;
  }
  size_t failures = 0;
  for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (listed[cp] || IsSurrogate(cp)) continue;
    const std::string s = Utf8({cp});
    for (UnicodeForm form : {UnicodeForm::kNFC, UnicodeForm::kNFD, UnicodeForm::kNFKC, UnicodeForm::kNFKD}) {
      const std::string got = Normalize(s, form);
      if (got != s && ++failures <= 20) ADD_FAILURE() << Name(form) << "(" << Hex(s) << ") gave " << Hex(got);
    }
  }
  EXPECT_EQ(failures, 0u);
}

// UnicodeData.txt: the general category and simple lowercase mapping of
// every code point (unlisted ones are Cn and map to themselves).
struct CharData {
  std::vector<std::string> category;  // indexed by code point
  std::vector<uint32_t> lower;
  std::vector<uint32_t> decomposes_or_combines;  // code points with a decomposition or ccc > 0
};

const CharData& UnicodeData() {
  static const CharData data = [] {
    CharData d;
    d.category.assign(kMaxCodePoint + 1, "Cn");
    d.lower.resize(kMaxCodePoint + 1);
    for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) d.lower[cp] = cp;
    uint32_t range_first = 0;
    for (const std::string& line : DataLines("UnicodeData.txt")) {
      const std::vector<std::string> f = Fields(line);
      if (f.size() < 14) continue;
      const uint32_t cp = static_cast<uint32_t>(std::stoul(f[0], nullptr, 16));
      // Ranges are two lines: "<CJK Ideograph, First>" ... "<..., Last>".
      if (f[1].find(", First>") != std::string::npos) {
        range_first = cp;
        continue;
      }
      const uint32_t first = f[1].find(", Last>") != std::string::npos ? range_first : cp;
      for (uint32_t c = first; c <= cp; ++c) d.category[c] = f[2];
      if (!f[13].empty()) d.lower[cp] = static_cast<uint32_t>(std::stoul(f[13], nullptr, 16));
      if (first == cp && (f[3] != "0" || !f[5].empty())) d.decomposes_or_combines.push_back(cp);
    }
    return d;
  }();
  return data;
}

// utf8proc's normalization of the whole string at once: no segments.
std::string WholeString(const std::string& text, UnicodeForm form) {
  const bool compose = form == UnicodeForm::kNFC || form == UnicodeForm::kNFKC;
  const bool compat = form == UnicodeForm::kNFKC || form == UnicodeForm::kNFKD;
  const int opts = UTF8PROC_STABLE | (compose ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE) | (compat ? UTF8PROC_COMPAT : 0);
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                              static_cast<utf8proc_ssize_t>(text.size()), &out, static_cast<utf8proc_option_t>(opts));
  std::string result = n >= 0 ? std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n)) : "";
  std::free(out);
  return result;
}

TEST(UnicodeConformance, SegmentsNormalizeAsTheWholeString) {
  // Starters that compose with marks (Latin, Kannada, Sinhala, Myanmar, Jamo
  // L and LV, kana), and marks or vowel signs that compose or reorder.
  const std::vector<uint32_t> before = {'A', 'e', 0x0B47, 0x0CC6, 0x0DD9, 0x1025, 0x1100, 0xAC00, 0x30AB, 0x304B, 0x3046, 0x05D0};
  const std::vector<uint32_t> after = {0x0301, 0x0327, 0x0B3E, 0x0CD5, 0x0DCF, 0x102E, 0x1161, 0x11A8, 0x3099, 0x309A, 0x05B7};
  std::vector<uint32_t> chars = UnicodeData().decomposes_or_combines;
  for (uint32_t cp = 0xFF61; cp <= 0xFFDC; ++cp) chars.push_back(cp);  // halfwidth kana and jamo
  ASSERT_GT(chars.size(), 5000u) << "UnicodeData.txt did not load";
  size_t failures = 0, checked = 0;
  for (uint32_t x : chars) {
    std::vector<std::vector<uint32_t>> cases;
    for (uint32_t b : before) cases.push_back({b, x});
    for (uint32_t a : after) cases.push_back({x, a});
    for (const auto& cps : cases) {
      const std::string s = Utf8(cps);
      for (UnicodeForm form : {UnicodeForm::kNFC, UnicodeForm::kNFD, UnicodeForm::kNFKC, UnicodeForm::kNFKD}) {
        ++checked;
        const std::string got = Normalize(s, form), want = WholeString(s, form);
        if (got != want && ++failures <= 20) {
          ADD_FAILURE() << Name(form) << "(" << Hex(s) << ") gave " << Hex(got) << ", the whole string " << Hex(want);
        }
      }
    }
  }
  EXPECT_GT(checked, 500000u);
  EXPECT_EQ(failures, 0u);
}

bool InCategories(uint32_t cp, std::initializer_list<const char*> cats) {
  const std::string& c = UnicodeData().category[cp];
  for (const char* want : cats) {
    // "L" matches every L*; "Lu" matches only itself.
    if (want[1] == '\0' ? c[0] == want[0] : c == want) return true;
  }
  return false;
}

bool AsciiPunctuation(uint32_t cp) {
  return cp < 0x80 && ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
                       (cp >= 123 && cp <= 126));
}

TEST(UnicodeConformance, CharacterClassesFollowUnicodeDataCategories) {
  ASSERT_EQ(UnicodeData().category[0x41], "Lu") << "UnicodeData.txt did not load";
  struct Class {
    const char* name;
    bool (*shoal)(uint32_t);
    bool (*expected)(uint32_t);
  };
  const Class classes[] = {
      {"IsPunctuation", tok::IsPunctuation, [](uint32_t cp) { return AsciiPunctuation(cp) || InCategories(cp, {"P"}); }},
      {"IsNumeric", tok::IsNumeric, [](uint32_t cp) { return InCategories(cp, {"N"}); }},
      {"IsBertControl", tok::IsBertControl,
       [](uint32_t cp) { return cp != '\t' && cp != '\n' && cp != '\r' && InCategories(cp, {"C"}); }},
      {"IsWordChar", tok::IsWordChar,
       [](uint32_t cp) {
         return cp == 0x200C || cp == 0x200D || InCategories(cp, {"L", "M", "Nd", "Nl", "Pc"});
       }},
      {"IsAlphanumeric", tok::IsAlphanumeric, [](uint32_t cp) { return cp == '_' || InCategories(cp, {"L", "N"}); }},
      {"IsNonspacingMark", tok::IsNonspacingMark, [](uint32_t cp) { return InCategories(cp, {"Mn"}); }},
      {"IsMark", tok::IsMark, [](uint32_t cp) { return InCategories(cp, {"M"}); }},
  };
  for (const Class& c : classes) {
    size_t failures = 0;
    for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
      if (c.shoal(cp) == c.expected(cp)) continue;
      if (++failures <= 10) {
        ADD_FAILURE() << c.name << "(U+" << Hex(Utf8({cp})) << ", " << UnicodeData().category[cp] << ") is "
                      << c.shoal(cp);
      }
    }
    EXPECT_EQ(failures, 0u) << c.name;
  }
}

TEST(UnicodeConformance, WhitespaceIsTheWhiteSpaceProperty) {
  std::vector<bool> white(kMaxCodePoint + 1, false);
  for (const std::string& line : DataLines("PropList.txt")) {
    const std::vector<std::string> f = Fields(line);
    if (f.size() < 2 || Trimmed(f[1]) != "White_Space") continue;  // not Pattern_White_Space
    const size_t dots = f[0].find("..");
    const uint32_t first = static_cast<uint32_t>(std::stoul(f[0].substr(0, dots), nullptr, 16));
    const uint32_t last =
        dots == std::string::npos ? first : static_cast<uint32_t>(std::stoul(f[0].substr(dots + 2), nullptr, 16));
    for (uint32_t cp = first; cp <= last; ++cp) white[cp] = true;
  }
  ASSERT_TRUE(white[0x3000]) << "PropList.txt did not load";
  size_t failures = 0;
  for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (tok::IsWhitespace(cp) != white[cp] && ++failures <= 10) {
      ADD_FAILURE() << "IsWhitespace(U+" << Hex(Utf8({cp})) << ") is " << tok::IsWhitespace(cp);
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(UnicodeConformance, LowercaseIsTheFullUnconditionalMapping) {
  // SpecialCasing.txt lines without a condition: "code; lower; title; upper;".
  std::map<uint32_t, std::vector<uint32_t>> special;
  for (const std::string& line : DataLines("SpecialCasing.txt")) {
    const std::vector<std::string> f = Fields(line);
    if (f.size() < 4 || (f.size() > 4 && f[4].find_first_not_of(' ') != std::string::npos)) continue;
    special[CodePoints(f[0]).at(0)] = CodePoints(f[1]);
  }
  ASSERT_TRUE(special.count(0x130)) << "SpecialCasing.txt did not load";
  size_t failures = 0;
  for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (IsSurrogate(cp)) continue;
    auto s = special.find(cp);
    const std::string expected = Utf8(s != special.end() ? s->second : std::vector<uint32_t>{UnicodeData().lower[cp]});
    std::string got;
    tok::AppendLowercase(got, cp);
    if (got != expected && ++failures <= 20) {
      ADD_FAILURE() << "lowercase(U+" << Hex(Utf8({cp})) << ") is " << Hex(got) << ", expected " << Hex(expected);
    }
  }
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace shoal::native::testing
