// PDFs through poppler's C++ API (document/pdf.h): pages rendered as
// poppler's own pdftoppm renders them, the text layer as written, and every
// bound and bad file refused with INVALID_INPUT. The PDFs are written by
// tests/reference/pdf_reference.py (by hand from the format; encrypted by
// qpdf).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "document/pdf.h"
#include "support/files.h"

namespace shoal::document {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's bytes ("" when it cannot be read: the comparison then fails).
std::string Bytes(const fs::path& p) { return shoal::testing::FileText(p.string()); }

class PdfReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("shoal-pdf-ref-" + std::to_string(::getpid()));
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_PDF_REFERENCE + " " + dir_.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    manifest_ = json::parse(Bytes(dir_ / "manifest.json"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::unique_ptr<PdfDocument> OpenPdf(const std::string& name, const PdfLimits& limits = {}) {
    auto doc = PdfDocument::Open(Bytes(dir_ / name), limits);
    EXPECT_TRUE(doc.ok()) << name << ": " << doc.status().ToString();
    return doc.ok() ? std::move(doc).value() : nullptr;
  }
  static Status OpenError(const std::string& name) { return PdfDocument::Open(Bytes(dir_ / name)).status(); }

  static inline fs::path dir_;
  static inline json manifest_;
};

TEST_F(PdfReference, PagesRenderAsPdftoppmRendersThem) {
  auto doc = OpenPdf("text.pdf");
  ASSERT_TRUE(doc);
  ASSERT_EQ(doc->page_count(), 2);
  for (const auto& [key, size] : manifest_["renders"].items()) {
    const int page = std::stoi(key.substr(0, key.find('-'))) - 1;
    const double dpi = std::stod(key.substr(key.find('-') + 1));
    Result<image::Image> img = doc->Render(page, dpi);
    ASSERT_TRUE(img.ok()) << key << ": " << img.status().ToString();
    ASSERT_EQ(img->width, size[0].get<uint32_t>()) << key;
    ASSERT_EQ(img->height, size[1].get<uint32_t>()) << key;
    const std::string want = Bytes(dir_ / ("render-" + key + ".rgb"));
    ASSERT_EQ(want.size(), img->rgb.size()) << key;
    size_t differ = 0, ink = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      differ += img->rgb[i] != static_cast<uint8_t>(want[i]);
      ink += img->rgb[i] < 128;
    }
    EXPECT_EQ(differ, 0u) << key;
    EXPECT_GT(ink, 100u) << key << ": the text is drawn";
  }
  // The second page is turned (/Rotate 90): rendered landscape.
  EXPECT_EQ(doc->PageSize(1)->first, 842);
}

TEST_F(PdfReference, TheTextLayerIsReadWordByWordWithBoxes) {
  auto doc = OpenPdf("text.pdf");
  ASSERT_TRUE(doc);
  for (int page = 0; page < 2; ++page) {
    Result<std::vector<PdfWord>> words = doc->Words(page);
    ASSERT_TRUE(words.ok()) << words.status().ToString();
    std::vector<std::string> texts;
    for (const PdfWord& w : *words) texts.push_back(w.text);
    EXPECT_EQ(texts, manifest_["words"][page].get<std::vector<std::string>>()) << "page " << page + 1;
  }
  // "Shoal" was set at x 72, baseline 720 points from the bottom of the
  // 842-point page, in 24-point Helvetica (ascender 718/1000 em): its box
  // starts at 72, its top 842 - 720 - 0.718 × 24 from the page's top.
  const PdfWord first = doc->Words(0)->front();
  EXPECT_NEAR(first.x, 72, 0.5);
  EXPECT_NEAR(first.y, 842 - 720 - 0.718 * 24, 0.5);
  EXPECT_GT(first.height, 17);
  EXPECT_LT(first.height, 25);
  // An encrypted PDF with an empty user password opens, as viewers open it.
  auto restricted = OpenPdf("restricted.pdf");
  ASSERT_TRUE(restricted);
  EXPECT_EQ(restricted->Words(0)->front().text, "Shoal");
}

// The text layer as lines: the lines poppler's own pdftotext -bbox-layout
// finds on a report's page (a title, a paragraph, two columns side by side,
// a run spaced out into three cells, a margin note set bottom to top), the
// same words and boxes, upright and on the page turned a quarter.
TEST_F(PdfReference, TheTextLayerGroupsIntoTheLinesPdftotextFinds) {
  auto doc = OpenPdf("layout.pdf");
  ASSERT_TRUE(doc);
  for (int page = 0; page < 2; ++page) {
    Result<std::vector<PdfLine>> lines = doc->Lines(page);
    ASSERT_TRUE(lines.ok()) << lines.status().ToString();
    const json& want = manifest_["lines"][page];
    ASSERT_EQ(lines->size(), want.size()) << "page " << page + 1;
    for (const json& w : want) {
      std::string text;
      for (const json& word : w["words"]) text += (text.empty() ? "" : " ") + word.get<std::string>();
      auto found = std::find_if(lines->begin(), lines->end(), [&](const PdfLine& l) { return l.text == text; });
      ASSERT_NE(found, lines->end()) << "page " << page + 1 << ": no line '" << text << "'";
      EXPECT_NEAR(found->x, w["box"][0].get<double>(), 0.01) << text;
      EXPECT_NEAR(found->y, w["box"][1].get<double>(), 0.01) << text;
      EXPECT_NEAR(found->x + found->width, w["box"][2].get<double>(), 0.01) << text;
      EXPECT_NEAR(found->y + found->height, w["box"][3].get<double>(), 0.01) << text;
    }
  }
  // Upright, the note is the one line set bottom to top; turned, the body is.
  auto note = [&](int page) {
    const Result<std::vector<PdfLine>> lines = doc->Lines(page);
    for (const PdfLine& l : *lines) {
      if (l.text.starts_with("Margin")) return l.rotation;
    }
    return -1;
  };
  EXPECT_EQ(note(0), 3);
  EXPECT_EQ(note(1), 0);
}

// Words a PDF sets without a space between them are glued; a wide gap with
// no space set is still a space; a word above the line's band starts another.
TEST(PdfTextLines, WordsJoinAsTheyAreSet) {
  const std::vector<PdfWord> words = {
      {"total", 10, 100, 30, 12, true, 0}, {"315.40", 43, 100, 36, 12, false, 0}, {",", 79.5, 100, 3, 12, false, 0},
      {"EUR", 86, 100, 20, 12, false, 0},  {"next", 10, 114, 22, 12, false, 0},
  };
  const std::vector<PdfLine> lines = GroupIntoLines(words);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "total 315.40, EUR");
  EXPECT_DOUBLE_EQ(lines[0].x + lines[0].width, 106);
  EXPECT_EQ(lines[1].text, "next");
}

TEST_F(PdfReference, PageRangesPickPagesWithinTheLimit) {
  PdfLimits limits;
  limits.max_pages = 20;
  auto many = OpenPdf("many.pdf", limits);  // 10,000 pages open: the page tree is all that is read
  ASSERT_TRUE(many);
  EXPECT_EQ(many->page_count(), 10000);
  EXPECT_EQ(*many->Select("1-3,9999,5"), (std::vector<int>{0, 1, 2, 9998, 4}));
  auto error = [&](const char* range) { return many->Select(range).status(); };
  EXPECT_NE(error("").message().find("10000 pages; the limit is 20"), std::string::npos) << error("").message();
  EXPECT_NE(error("1-21").message().find("more than 20 pages"), std::string::npos);
  EXPECT_NE(error("10001").message().find("not in the document"), std::string::npos);
  EXPECT_NE(error("3-1").message().find("backwards"), std::string::npos);
  for (const char* bad : {"0", "a", "1-", "-2", "1,,2", "1.5", "1 - 2"}) {
    EXPECT_EQ(error(bad).code(), Code::kInvalidInput) << bad;
  }
  EXPECT_TRUE(many->Render(9999, 72).ok());
}

TEST_F(PdfReference, BadPdfsAreInvalidInputSayingWhy) {
  for (const char* name : {"encrypted.pdf", "truncated.pdf", "corrupt.pdf", "not-a-pdf.pdf"}) {
    const Status s = OpenError(name);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << name << ": " << s.ToString();
    std::printf("%-14s %s\n", name, s.message().c_str());
  }
  EXPECT_NE(OpenError("encrypted.pdf").message().find("password"), std::string::npos);
  auto huge = OpenPdf("huge-page.pdf");
  ASSERT_TRUE(huge);
  const Status big = huge->Render(0, 72).status();
  EXPECT_EQ(big.code(), Code::kInvalidInput);
  EXPECT_NE(big.message().find("100000 × 100000 points"), std::string::npos) << big.message();
  auto doc = OpenPdf("text.pdf");
  EXPECT_EQ(doc->Render(2, 72).status().code(), Code::kInvalidInput);
  EXPECT_EQ(doc->Render(0, 5000).status().code(), Code::kInvalidInput);
  EXPECT_EQ(doc->Words(-1).status().code(), Code::kInvalidInput);
  PdfLimits small;
  small.max_bytes = 100;
  EXPECT_EQ(PdfDocument::Open(Bytes(dir_ / "text.pdf"), small).status().code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace shoal::document
