// OCR's own steps (src/ocr/) on inputs whose answers are known by
// construction: rectangles of pixels and their minimum-area boxes, a
// synthetic DB probability map and the boxes PaddleOCR's post-processing
// rules give for it, reading order, CTC decoding, the keys file, cutting a
// line out, and the three models' inputs. The models themselves run in
// tests/integration/ocr_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ocr/crop.h"
#include "ocr/geometry.h"
#include "ocr/recognition.h"
#include "ocr/stage_inputs.h"
#include "ocr/text_detection.h"

namespace shoal::ocr {
namespace {

std::vector<Point> Block(int x0, int y0, int w, int h) {
  std::vector<Point> p;
  for (int y = y0; y < y0 + h; ++y) {
    for (int x = x0; x < x0 + w; ++x) p.push_back({static_cast<double>(x), static_cast<double>(y)});
  }
  return p;
}

void ExpectPoint(Point got, double x, double y) {
  EXPECT_NEAR(got.x, x, 1e-9);
  EXPECT_NEAR(got.y, y, 1e-9);
}

TEST(OcrGeometry, MinAreaRectOfABlockIsItsPixelCentres) {
  const Quad q = MinAreaRect(Block(5, 2, 10, 4));
  ExpectPoint(q[0], 5, 2);
  ExpectPoint(q[1], 14, 2);
  ExpectPoint(q[2], 14, 5);
  ExpectPoint(q[3], 5, 5);
  EXPECT_NEAR(ShortSide(q), 3, 1e-9);
  EXPECT_NEAR(Area(q), 27, 1e-9);
  EXPECT_NEAR(Perimeter(q), 24, 1e-9);
  const Quad grown = Grow(q, 1.5);
  ExpectPoint(grown[0], 3.5, 0.5);
  ExpectPoint(grown[2], 15.5, 6.5);
}

TEST(OcrGeometry, MinAreaRectFollowsARotatedRectangle) {
  // A 40 × 8 rectangle turned by 30°: its box has its sides, whatever the turn.
  std::vector<Point> pts;
  const double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
  for (double u = 0; u <= 40; u += 0.5) {
    for (double v = 0; v <= 8; v += 0.5) pts.push_back({100 + u * c - v * s, 50 + u * s + v * c});
  }
  const Quad q = MinAreaRect(pts);
  EXPECT_NEAR(Area(q), 320, 1e-6);
  EXPECT_NEAR(ShortSide(q), 8, 1e-6);
  EXPECT_LT(q[0].x, q[1].x);
  EXPECT_TRUE(Inside(q, {100 + 20 * c - 4 * s, 50 + 20 * s + 4 * c}));
  EXPECT_FALSE(Inside(q, {90, 90}));
}

TEST(OcrDetection, BoxesFromAProbabilityMap) {
  // A 100 × 40 map: two lines of text (0.9) on one row of the page and one
  // below, a faint region (0.4: over the threshold, under box_threshold) and
  // a speck (2 × 2: under min_size). The image is twice the map's size.
  const uint32_t W = 100, H = 40;
  std::vector<float> prob(W * H, 0.05f);
  auto fill = [&](uint32_t x0, uint32_t y0, uint32_t w, uint32_t h, float v) {
    for (uint32_t y = y0; y < y0 + h; ++y) {
      for (uint32_t x = x0; x < x0 + w; ++x) prob[y * W + x] = v;
    }
  };
  fill(50, 5, 40, 6, 0.9f);  // right on the first row
  fill(5, 6, 30, 6, 0.9f);   // left on the first row, a pixel lower: still first
  fill(5, 25, 60, 8, 0.9f);  // the second row
  fill(70, 25, 20, 6, 0.4f);
  fill(90, 35, 2, 2, 0.95f);
  const std::vector<TextBox> boxes = FindTextBoxes(prob, W, H, 2 * W, 2 * H);
  ASSERT_EQ(boxes.size(), 3u);
  // Reading order, and each region grown by area · 1.5 / perimeter, in the image's pixels.
  const double d0 = 29.0 * 5 * 1.5 / (2 * (29 + 5));
  EXPECT_NEAR(boxes[0].quad[0].x, std::round((5 - d0) * 2), 1e-9);
  EXPECT_NEAR(boxes[0].quad[0].y, std::round((6 - d0) * 2), 1e-9);
  EXPECT_NEAR(boxes[0].quad[2].x, std::round((34 + d0) * 2), 1e-9);
  EXPECT_GT(boxes[1].quad[0].x, boxes[0].quad[0].x);
  EXPECT_GT(boxes[2].quad[0].y, boxes[1].quad[0].y);
  for (const TextBox& b : boxes) EXPECT_NEAR(b.score, 0.9f, 1e-6);
  // A higher threshold leaves the faint region out too; none left at 0.95.
  DetectionOptions strict;
  strict.threshold = 0.95f;
  EXPECT_TRUE(FindTextBoxes(prob, W, H, W, H, strict).empty());
  EXPECT_TRUE(FindTextBoxes(std::vector<float>(10), W, H, W, H).empty()) << "a map of the wrong size";
}

TEST(OcrRecognition, CtcMergesRunsAndDropsBlanks) {
  const Charset charset = Charset::FromCharacters({"a", "b"});  // blank, a, b, space
  ASSERT_EQ(charset.size(), 4u);
  // Steps: a a blank a b b space blank.
  const int best[] = {1, 1, 0, 1, 2, 2, 3, 0};
  const float p[] = {0.9f, 0.7f, 0.99f, 0.8f, 0.6f, 0.6f, 0.5f, 0.9f};
  std::vector<float> top1;
  for (size_t t = 0; t < 8; ++t) top1.insert(top1.end(), {p[t], static_cast<float>(best[t])});
  const auto r = CtcDecode(top1, charset);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "aab ");
  EXPECT_NEAR(r->confidence, (0.9 + 0.8 + 0.6 + 0.5) / 4, 1e-6) << "the first step of each run counts";
  EXPECT_EQ(CtcDecode(std::vector<float>{0.25f, 0.0f}, charset)->confidence, 0.0f) << "only a blank";
  // A class the keys do not have is the recognizer's fault, not a character.
  EXPECT_EQ(CtcDecode(std::vector<float>{0.9f, 4.0f}, charset).status().code(), Code::kInferenceError);
}

TEST(OcrRecognition, TheKeysFileIsOneCharacterPerLine) {
  const std::string path = "/tmp/shoal-ocr-keys-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << "x\r\n\xe4\xb8\xad\ny";
  auto c = Charset::Load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 5u);  // blank, x, 中, y, space
  EXPECT_EQ(c->at(2), "\xe4\xb8\xad");
  EXPECT_EQ(c->at(4), " ");
  EXPECT_EQ(Charset::Load("/nonexistent/keys.txt").status().code(), Code::kInvalidInput);
}

TEST(OcrCrop, ALineIsCutOutUprightAndATallOneTurned) {
  image::Image img = image::BlankImage(40, 30);
  for (uint32_t y = 0; y < 30; ++y) {
    for (uint32_t x = 0; x < 40; ++x) img.Pixel(x, y)[0] = static_cast<uint8_t>(x * 5 + y);
  }
  const image::Image line = CropTextLine(img, {Point{10, 5}, Point{30, 5}, Point{30, 15}, Point{10, 15}});
  ASSERT_EQ(line.width, 20u);
  ASSERT_EQ(line.height, 10u);
  EXPECT_EQ(line.Pixel(0, 0)[0], img.Pixel(10, 5)[0]);
  EXPECT_EQ(line.Pixel(19, 9)[0], img.Pixel(29, 14)[0]);
  const image::Image tall = CropTextLine(img, {Point{5, 2}, Point{11, 2}, Point{11, 26}, Point{5, 26}});
  EXPECT_EQ(tall.width, 24u) << "turned a quarter: its height is now its width";
  EXPECT_EQ(tall.height, 6u);
  const image::Image turned = Rotate180(line);
  EXPECT_EQ(turned.Pixel(0, 0)[0], line.Pixel(19, 9)[0]);
}

TEST(OcrCrop, AMarginIsTheLinesBackgroundAboveAndBelow) {
  // A dark line on a light grey page, one dark pixel reaching the top row.
  image::Image line = image::BlankImage(10, 20);
  for (uint32_t y = 0; y < 20; ++y) {
    for (uint32_t x = 0; x < 10; ++x) {
      const bool ink = (y >= 6 && y < 14 && x % 3 == 0) || (x == 4 && y == 0);
      std::fill_n(line.Pixel(x, y), 3, ink ? 10 : 230);
      line.Pixel(x, y)[2] = ink ? 10 : 240;
    }
  }
  const image::Image framed = WithMargin(line, 0.15);
  ASSERT_EQ(framed.width, 10u);
  ASSERT_EQ(framed.height, 26u);  // 3 rows above, 3 below
  for (uint32_t x = 0; x < 10; ++x) {
    for (uint32_t y : {0u, 2u, 23u, 25u}) {
      EXPECT_EQ(framed.Pixel(x, y)[0], 230);
      EXPECT_EQ(framed.Pixel(x, y)[2], 240);
    }
    for (uint32_t y = 0; y < 20; ++y) EXPECT_EQ(framed.Pixel(x, y + 3)[0], line.Pixel(x, y)[0]);
  }
  EXPECT_EQ(WithMargin(line, 0).height, 20u);
}

TEST(OcrInputs, TheModelsTakeBgrPlanesOfTheirSizes) {
  image::Image img = image::BlankImage(1000, 500);
  for (size_t i = 0; i < img.rgb.size(); i += 3) img.rgb[i] = 255;  // pure red
  const PlaneBatch det = DetectorBatch(img, 960);
  EXPECT_EQ(det.width, 960u);
  EXPECT_EQ(det.height, 480u);
  const size_t plane = size_t{det.width} * det.height;
  EXPECT_NEAR(det.values[0], (0 - 0.485f) / 0.229f, 1e-5) << "plane 0 is blue";
  EXPECT_NEAR(det.values[2 * plane], (1 - 0.406f) / 0.225f, 1e-5) << "plane 2 is red";
  const PlaneBatch small = DetectorBatch(image::BlankImage(50, 20), 960);
  EXPECT_EQ(small.width, 64u);
  EXPECT_EQ(small.height, 32u);

  const image::Image wide = image::BlankImage(600, 30), narrow = image::BlankImage(40, 40);
  const image::Image* lines[] = {&wide, &narrow};
  const PlaneBatch rec = RecognizerBatch(lines);
  EXPECT_EQ(rec.height, 48u);
  EXPECT_EQ(rec.width, 960u) << "as wide as the widest line at 48 high";
  EXPECT_FLOAT_EQ(rec.values[3 * 48 * 960 + 100], 0.0f) << "padding right of the narrow line";
  EXPECT_FLOAT_EQ(rec.values[3 * 48 * 960 + 10], -1.0f) << "a black pixel: (0 − 0.5) / 0.5";
  // The classifier sees a line up to 4:1 whole, a longer one as three 4:1
  // windows at its own aspect: its start, middle and end.
  image::Image halves = image::BlankImage(600, 30);  // white left half, black right half
  for (uint32_t y = 0; y < 30; ++y) std::fill_n(halves.Pixel(0, y), 300 * 3, uint8_t{255});
  const std::vector<image::Image> cls_lines = {halves, narrow};
  std::vector<uint32_t> line_of;
  const PlaneBatch cls = ClassifierBatch(cls_lines, &line_of);
  EXPECT_EQ(cls.width, 192u);
  EXPECT_EQ(cls.height, 48u);
  ASSERT_EQ(cls.count, 4u);
  EXPECT_EQ(line_of, (std::vector<uint32_t>{0, 0, 0, 1}));
  const size_t slot = 3 * 48 * 192;
  EXPECT_FLOAT_EQ(cls.values[0 * slot + 191], 1.0f) << "the start window: white to its right edge (120 columns of 300)";
  EXPECT_FLOAT_EQ(cls.values[1 * slot + 0], 1.0f) << "the middle window starts white";
  EXPECT_FLOAT_EQ(cls.values[1 * slot + 191], -1.0f) << "and ends black";
  EXPECT_FLOAT_EQ(cls.values[2 * slot + 0], -1.0f) << "the end window: black";
  EXPECT_FLOAT_EQ(cls.values[3 * slot + 47], -1.0f) << "the short line whole, 48 wide";
  EXPECT_FLOAT_EQ(cls.values[3 * slot + 48], 0.0f) << "and padded";
}

}  // namespace
}  // namespace shoal::ocr
