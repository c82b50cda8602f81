// OcrModel: a pipeline model that reads text in images — PaddleOCR's
// PP-OCR models (a DB text detector, an optional text-angle classifier, an
// SVTR-LCNet recognizer with CTC), each a bare graph on an engine runtime
// (the ONNX Runtime sidecar: ModelConfig::graph, Model::Run), with every
// step between them Shoal's own (src/ocr/: the models' inputs, the
// detector's post-processing, cutting the lines out, CTC decoding).
//
// Its profile (`runtime: ocr`, `task: extract`) names the stages' files in
// its directory under `ocr:` (docs/api.md "OCR"):
//   ocr: {detector: ch_PP-OCRv4_det_infer.onnx, classifier: ch_ppocr_mobile_v2.0_cls_infer.onnx,
//         recognizer: ch_PP-OCRv4_rec_infer.onnx, keys: ppocr_keys_v1.txt, engine: onnx,
//         limit_side: 960, threshold: 0.3, box_threshold: 0.6, unclip_ratio: 2.0,
//         drop_score: 0.5, batch: 8, dpi: 300, max_pages: 20}
// (those are the defaults; classifier "" runs none).
//
// An input is an image, or a PDF (ExtractInput::document): its pages (all,
// or those `pages` names, at most max_pages), each a line of the answer's
// says. A page that carries a text layer (a born-digital PDF's, or one a
// scanner's OCR left) is read from it — its lines as the PDF sets them
// (document/text_lines.h), confidence 1, boxes in the page's pixels at
// `dpi` — unless the input says text_layer false; any other page is
// rendered at `dpi` by poppler (document/pdf.h) and read as an image.
//
// A batch of images runs stage by stage: each image through the detector
// (its own size), then every line of every image through the classifier
// and the recognizer together, in batches of lines of similar shape — each
// stage batched on its own across the requests of the batch. A line read
// under drop_score is read once more turned half a turn, and the surer
// reading kept (the classifier may misjudge a line). An image's
// answer is its lines in reading order with their confidences and boxes;
// lines still under drop_score are left out.
//
// Threading: immutable after Load; Extract may run from several threads
// at once (the stages' runtime pipelines their calls).
#pragma once

#include <functional>
#include <memory>

#include "document/pdf.h"
#include "image/limits.h"
#include "ocr/recognition.h"
#include "ocr/text_detection.h"
#include "runtime/runtime.h"

namespace shoal::ocr {

// The runtime that runs a stage, by its profile (runtime, process).
using StageRuntimes = std::function<Runtime*(const ModelSpec&)>;

class OcrModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx,
                                             const StageRuntimes& stages);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override;
  bool takes_images() const override { return true; }
  bool takes_text() const override { return false; }
  bool takes_documents() const override { return true; }

  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override;

 private:
  OcrModel() = default;

  // A page of an input, as it is read: its image, or the lines of its text
  // layer when that is taken.
  struct Page {
    uint32_t number = 0;  // 1-based in its document; 0: the input is an image
    uint32_t place = 0;   // its place among the pages the input asks for
    const image::Image* image = nullptr;
    std::vector<TextLine> layer;
  };
  // Calls `each` with the pages an input stands for, one at a time: its
  // image, or its document's pages, each rendered or read from its layer.
  Status ForEachPage(const ExtractInput& in, const std::function<Status(Page&)>& each) const;
  // The boxes of the image's lines, in reading order (the detector).
  Status Detect(const image::Image& image, std::vector<Quad>* boxes) const;
  // Each line's text: turned upright as the classifier says, read, and a
  // doubtful reading tried once more the other way up.
  Status Read(std::vector<image::Image>* lines, std::vector<RecognizedText>* texts) const;
  // The recognizer's reading of each line (with line_margin_), in batches
  // of similar widths.
  Status Recognize(std::span<const image::Image> lines, std::vector<RecognizedText>* texts) const;
  // Lines the classifier finds upside down, turned.
  Status Upright(std::vector<image::Image>* lines) const;

  ModelConfig config_;
  std::unique_ptr<Model> detector_, classifier_, recognizer_;  // classifier_ may be null
  Charset charset_;
  DetectionOptions detection_;
  image::ImageLimits limits_;
  uint32_t limit_side_ = 960;
  double drop_score_ = 0.5;
  // Background added above and below each line the recognizer reads, as a
  // share of its height: a line with no descenders is cut so tight (its box
  // ends at the baseline) that the recognizer, trained on looser crops,
  // reads its words as one ("Invoice2041:totaldue"). 0.15 read every
  // character of the OCR test's pages (98.9 % without) and 99.85 % of the
  // OCR benchmark's dense page (99.38 %); 0.3 shrank the letters too far
  // (97.4 %). Shoal's, not PaddleOCR's.
  double line_margin_ = 0.15;
  uint32_t batch_ = 8;
  // Tesseract's advice for OCR; 150 lost spaces between words in the test's
  // scans (before line_margin_).
  double dpi_ = 300;
  document::PdfLimits pdf_limits_;
};

}  // namespace shoal::ocr
