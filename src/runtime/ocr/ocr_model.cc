#include "runtime/ocr/ocr_model.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "common/log.h"
#include "document/pdf.h"
#include "image/decode.h"
#include "ocr/crop.h"
#include "ocr/stage_inputs.h"

namespace shoal::ocr {
namespace {

namespace fs = std::filesystem;

// One stage of the pipeline on the engine runtime, as a bare graph.
Result<std::unique_ptr<Model>> LoadStage(const ModelConfig& pipeline, const std::string& stage,
                                         const std::string& file, const std::string& engine, const LoadContext& ctx,
                                         const StageRuntimes& stages) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(pipeline.path) / file, ec)) {
    return InvalidInput("ocr." + stage + ": " + (fs::path(pipeline.path) / file).string() + " is not a file");
  }
  ModelSpec spec;
  spec.id = pipeline.id + "/" + stage;
  spec.runtime = engine;
  spec.process = RuntimeProcess::kShared;
  spec.path = pipeline.path;
  Runtime* runtime = stages(spec);
  if (!runtime) return InvalidInput("ocr.engine: no runtime '" + engine + "' runs this pipeline's stages");
  ModelConfig c;
  c.id = spec.id;
  c.task = Task::kExtract;
  c.path = pipeline.path;
  c.graph = true;
  c.options = RuntimeOptions(engine);
  c.options.Set("file", file);
  auto model = runtime->Load(c, {.threads = ctx.threads});
  if (!model.ok()) return Status(model.status().code(), "ocr." + stage + ": " + model.status().message());
  return model;
}

// The stage's one output, which must have `rank` dimensions.
Result<Tensor> OneOutput(std::vector<Tensor> outputs, size_t rank, const char* stage) {
  if (outputs.size() != 1 || outputs[0].shape.size() != rank) {
    return Status(Code::kInferenceError, std::string("ocr: the ") + stage + " answered an output of an unexpected shape");
  }
  return std::move(outputs[0]);
}

Tensor Input(PlaneBatch b) {
  return Tensor{"x", {b.count, 3, b.height, b.width}, std::move(b.values)};
}

// A text layer's line as the pipeline answers it: its box in the pixels of
// the page rendered at `dpi`, corners clockwise from the text's own top-left
// (as a rotated line's detected box).
TextLine TextLayerLine(const document::PdfLine& l, uint32_t page, double dpi) {
  const auto px = [&](double points) { return static_cast<float>(points * dpi / 72); };
  const float x0 = px(l.x), y0 = px(l.y), x1 = px(l.x + l.width), y1 = px(l.y + l.height);
  std::array<std::array<float, 2>, 4> box = {{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}};
  std::rotate(box.begin(), box.begin() + l.rotation % 4, box.end());
  return TextLine{l.text, 1.0f, box, page, true};
}

}  // namespace

Result<std::unique_ptr<Model>> OcrModel::Load(const ModelConfig& config, const LoadContext& ctx,
                                              const StageRuntimes& stages) {
  if (config.task != Task::kExtract) return InvalidInput("task: an OCR pipeline extracts (task: extract)");
  std::unique_ptr<OcrModel> m(new OcrModel());
  m->config_ = config;
  // DB's training shrinks text regions; PaddleOCR grows them back by 1.5,
  // which on Shoal's rendered pages cuts lines so tight that the recognizer
  // drops the spaces between words (89 % of characters right at 1.5, 99 %
  // at 2.0: tests/integration/ocr_test.cc). 2.0 is the default here.
  m->detection_.unclip_ratio = 2.0;
  OptionReader o(config.options);
  std::string detector = "ch_PP-OCRv4_det_infer.onnx", classifier = "ch_ppocr_mobile_v2.0_cls_infer.onnx",
              recognizer = "ch_PP-OCRv4_rec_infer.onnx", keys = "ppocr_keys_v1.txt", engine = "onnx";
  double threshold = m->detection_.threshold, box_threshold = m->detection_.box_threshold;
  SHOAL_RETURN_IF_ERROR(o.String("detector", &detector));
  SHOAL_RETURN_IF_ERROR(o.String("classifier", &classifier));
  SHOAL_RETURN_IF_ERROR(o.String("recognizer", &recognizer));
  SHOAL_RETURN_IF_ERROR(o.String("keys", &keys));
  SHOAL_RETURN_IF_ERROR(o.String("engine", &engine));
  SHOAL_RETURN_IF_ERROR(o.Count("limit_side", 32, 8192, &m->limit_side_));
  SHOAL_RETURN_IF_ERROR(o.Number("threshold", 0, 1, &threshold));
  SHOAL_RETURN_IF_ERROR(o.Number("box_threshold", 0, 1, &box_threshold));
  SHOAL_RETURN_IF_ERROR(o.Number("unclip_ratio", 0, 10, &m->detection_.unclip_ratio));
  SHOAL_RETURN_IF_ERROR(o.Number("line_margin", 0, 1, &m->line_margin_));
  SHOAL_RETURN_IF_ERROR(o.Number("drop_score", 0, 1, &m->drop_score_));
  SHOAL_RETURN_IF_ERROR(o.Count("batch", 1, 256, &m->batch_));
  SHOAL_RETURN_IF_ERROR(o.Number("dpi", 18, 600, &m->dpi_));
  uint32_t max_pages = 20;
  SHOAL_RETURN_IF_ERROR(o.Count("max_pages", 1, 1000, &max_pages));
  m->pdf_limits_.max_pages = static_cast<int>(max_pages);
  SHOAL_RETURN_IF_ERROR(o.Finish());
  m->detection_.threshold = static_cast<float>(threshold);
  m->detection_.box_threshold = static_cast<float>(box_threshold);

  SHOAL_ASSIGN_OR_RETURN(m->charset_, Charset::Load((fs::path(config.path) / keys).string()));
  SHOAL_ASSIGN_OR_RETURN(m->detector_, LoadStage(config, "detector", detector, engine, ctx, stages));
  if (ctx.progress) ctx.progress(0.3);
  if (!classifier.empty()) {
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, LoadStage(config, "classifier", classifier, engine, ctx, stages));
  }
  SHOAL_ASSIGN_OR_RETURN(m->recognizer_, LoadStage(config, "recognizer", recognizer, engine, ctx, stages));
  if (ctx.progress) ctx.progress(0.9);
  // The keys must be the recognizer's classes: one blank line through it says.
  const image::Image blank = image::BlankImage(96, 48);
  const image::Image* one = &blank;
  std::vector<Tensor> out;
  SHOAL_RETURN_IF_ERROR(
      m->recognizer_->Run(std::vector<Tensor>{Input(RecognizerBatch({&one, 1}))}, RunOutputs::kWhole, &out));
  SHOAL_ASSIGN_OR_RETURN(const Tensor probs, OneOutput(std::move(out), 3, "recognizer"));
  if (static_cast<size_t>(probs.shape[2]) != m->charset_.size()) {
    return InvalidInput("ocr.keys: " + keys + " gives " + std::to_string(m->charset_.size()) +
                        " classes (with the blank and the space); the recognizer has " +
                        std::to_string(probs.shape[2]));
  }
  return std::unique_ptr<Model>(std::move(m));
}

size_t OcrModel::memory_bytes() const {
  return detector_->memory_bytes() + recognizer_->memory_bytes() + (classifier_ ? classifier_->memory_bytes() : 0);
}

Status OcrModel::Upright(std::vector<image::Image>* lines) const {
  constexpr size_t kChunk = 64;  // the classifier's input is small: many lines at once
  for (size_t start = 0; start < lines->size(); start += kChunk) {
    const size_t n = std::min(kChunk, lines->size() - start);
    std::vector<uint32_t> line_of;  // a long line is seen as several windows (stage_inputs.h)
    PlaneBatch windows = ClassifierBatch(std::span(*lines).subspan(start, n), &line_of);
    std::vector<Tensor> out;
    SHOAL_RETURN_IF_ERROR(classifier_->Run(std::vector<Tensor>{Input(std::move(windows))}, RunOutputs::kWhole, &out));
    SHOAL_ASSIGN_OR_RETURN(const Tensor probs, OneOutput(std::move(out), 2, "classifier"));
    if (probs.shape[0] != static_cast<int64_t>(line_of.size()) || probs.shape[1] != 2) {
      return Status(Code::kInferenceError, "ocr: the classifier's output is not two classes per window");
    }
    // Class 1 is "180": a line's probability of it is its windows' mean.
    std::vector<double> upside_down(n, 0);
    std::vector<uint32_t> windows_of(n, 0);
    for (size_t w = 0; w < line_of.size(); ++w) {
      upside_down[line_of[w]] += probs.values[2 * w + 1];
      ++windows_of[line_of[w]];
    }
    for (size_t k = 0; k < n; ++k) {
      // Turned when the classifier is sure (PaddleOCR's cls_thresh 0.9).
      if (upside_down[k] / windows_of[k] > 0.9) (*lines)[start + k] = Rotate180((*lines)[start + k]);
    }
  }
  return Status::Ok();
}

Status OcrModel::Recognize(std::span<const image::Image> cut, std::vector<RecognizedText>* texts) const {
  texts->assign(cut.size(), {});
  std::vector<image::Image> lines;
  lines.reserve(cut.size());
  for (const image::Image& line : cut) lines.push_back(WithMargin(line, line_margin_));
  // Lines of similar aspect together, so that a batch pads little.
  std::vector<size_t> order(lines.size());
  std::iota(order.begin(), order.end(), 0);
  const auto aspect = [&](size_t i) { return static_cast<double>(lines[i].width) / std::max(lines[i].height, 1u); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return aspect(a) < aspect(b); });
  // A batch is as wide as its widest line: at most batch_ lines, and at most
  // kBatchWidth columns of 48 rows in all (the recognizer's activations grow
  // with both; 8 lines of a full A4 line's 1440 columns stay within its
  // runtime process's memory).
  constexpr double kBatchWidth = 8 * 1440;
  for (size_t start = 0, n = 0; start < order.size(); start += n) {
    n = 0;
    double width = 0;
    while (start + n < order.size() && n < batch_) {
      width = std::max(width, 48 * std::max(aspect(order[start + n]), 320.0 / 48));
      if (n > 0 && width * static_cast<double>(n + 1) > kBatchWidth) break;
      ++n;
    }
    std::vector<const image::Image*> chunk;
    for (size_t k = 0; k < n; ++k) chunk.push_back(&lines[order[start + k]]);
    std::vector<Tensor> out;
    // Each step's most probable class only: CTC's greedy decoding needs no
    // more, and the whole [n, steps, 6625] would be ~37 MB a batch to move.
    SHOAL_RETURN_IF_ERROR(recognizer_->Run(std::vector<Tensor>{Input(RecognizerBatch(chunk))}, RunOutputs::kTop1, &out));
    SHOAL_ASSIGN_OR_RETURN(const Tensor top1, OneOutput(std::move(out), 3, "recognizer"));
    if (top1.shape[0] != static_cast<int64_t>(n)) {
      return Status(Code::kInferenceError, "ocr: the recognizer's output does not fit its batch");
    }
    const auto per_line = static_cast<size_t>(top1.shape[1]) * 2;
    for (size_t k = 0; k < n; ++k) {
      SHOAL_ASSIGN_OR_RETURN((*texts)[order[start + k]],
                             CtcDecode(std::span(top1.values).subspan(k * per_line, per_line), charset_));
    }
  }
  return Status::Ok();
}

Status OcrModel::ForEachPage(const ExtractInput& in, const std::function<Status(Page&)>& each) const {
  if (in.document.empty()) {
    SHOAL_ASSIGN_OR_RETURN(const image::Image img, image::DecodeImage(in.image, limits_));
    Page p{.image = &img, .layer = {}};
    return each(p);
  }
  SHOAL_ASSIGN_OR_RETURN(const auto pdf, document::PdfDocument::Open(in.document, pdf_limits_));
  SHOAL_ASSIGN_OR_RETURN(const std::vector<int> selected, pdf->Select(in.pages));
  for (size_t k = 0; k < selected.size(); ++k) {
    Page p{.number = static_cast<uint32_t>(selected[k] + 1),
           .place = static_cast<uint32_t>(k),
           .image = nullptr,
           .layer = {}};
    if (in.text_layer) {
      SHOAL_ASSIGN_OR_RETURN(const std::vector<document::PdfLine> lines, pdf->Lines(selected[k]));
      for (const document::PdfLine& l : lines) p.layer.push_back(TextLayerLine(l, p.number, dpi_));
    }
    image::Image img;
    if (p.layer.empty()) {
      SHOAL_ASSIGN_OR_RETURN(img, pdf->Render(selected[k], dpi_));
      p.image = &img;
    }
    SHOAL_RETURN_IF_ERROR(each(p));
  }
  return Status::Ok();
}

Status OcrModel::Detect(const image::Image& img, std::vector<Quad>* boxes) const {
  PlaneBatch planes = DetectorBatch(img, limit_side_);
  const uint32_t map_w = planes.width, map_h = planes.height;
  std::vector<Tensor> det;
  SHOAL_RETURN_IF_ERROR(detector_->Run(std::vector<Tensor>{Input(std::move(planes))}, RunOutputs::kWhole, &det));
  SHOAL_ASSIGN_OR_RETURN(const Tensor prob, OneOutput(std::move(det), 4, "detector"));
  if (prob.shape[2] != map_h || prob.shape[3] != map_w) {
    return Status(Code::kInferenceError, "ocr: the detector's map is not the size of its input");
  }
  for (const TextBox& box : FindTextBoxes(prob.values, map_w, map_h, img.width, img.height, detection_)) {
    boxes->push_back(box.quad);
  }
  return Status::Ok();
}

Status OcrModel::Read(std::vector<image::Image>* lines, std::vector<RecognizedText>* texts) const {
  if (classifier_) SHOAL_RETURN_IF_ERROR(Upright(lines));
  SHOAL_RETURN_IF_ERROR(Recognize(*lines, texts));
  // The classifier proposes, the recognizer disposes: a line read with too
  // little confidence is read again turned half a turn (the classifier may
  // have misjudged it, or there is none), and the surer reading is kept.
  std::vector<size_t> doubtful;
  std::vector<image::Image> turned;
  for (size_t k = 0; k < texts->size(); ++k) {
    if ((*texts)[k].confidence >= drop_score_) continue;
    doubtful.push_back(k);
    turned.push_back(Rotate180((*lines)[k]));
  }
  if (turned.empty()) return Status::Ok();
  std::vector<RecognizedText> again;
  SHOAL_RETURN_IF_ERROR(Recognize(turned, &again));
  for (size_t j = 0; j < doubtful.size(); ++j) {
    if (again[j].confidence > (*texts)[doubtful[j]].confidence) (*texts)[doubtful[j]] = std::move(again[j]);
  }
  return Status::Ok();
}

Status OcrModel::Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) {
  // Detection, page by page; every line of the batch cut out, then read
  // together. An item's lines are gathered with their page's place (text
  // layers' now, OCR'd ones once read) and answered in that order.
  struct LineOf {
    size_t input;
    uint32_t page, place;
    Quad box;
  };
  std::vector<image::Image> lines;
  std::vector<LineOf> line_of;
  std::vector<std::vector<std::pair<uint32_t, TextLine>>> placed(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = ExtractOutput{};
    if (in[i].image.empty() && in[i].document.empty()) {
      out[i].status = InvalidInput("input: model '" + config_.id + "' reads images and documents, not text");
      continue;
    }
    if (in[i].aggregation || in[i].top_k) {
      out[i].status = InvalidInput(std::string(in[i].aggregation ? "aggregation" : "top_k") + ": model '" +
                                   config_.id + "' reads lines of text; it groups no entities and ranks no labels");
      continue;
    }
    // A page at a time: only its lines outlive it. A failed detector call
    // fails the batch; a page that does not decode or render, the item.
    Status batch_failure;
    const size_t first_line = lines.size();
    const Status s = ForEachPage(in[i], [&](Page& page) -> Status {
      for (TextLine& l : page.layer) placed[i].emplace_back(page.place, std::move(l));
      if (!page.image) return Status::Ok();
      std::vector<Quad> boxes;
      if (Status d = Detect(*page.image, &boxes); !d.ok()) return batch_failure = d;
      for (const Quad& box : boxes) {
        lines.push_back(CropTextLine(*page.image, box));
        line_of.push_back({i, page.number, page.place, box});
      }
      return Status::Ok();
    });
    SHOAL_RETURN_IF_ERROR(batch_failure);
    if (!s.ok()) {  // the item's lines so far go with it
      lines.resize(first_line);
      line_of.resize(first_line);
      out[i].status = s;
    }
  }
  if (!lines.empty()) {
    std::vector<RecognizedText> texts;
    SHOAL_RETURN_IF_ERROR(Read(&lines, &texts));
    for (size_t k = 0; k < texts.size(); ++k) {
      if (texts[k].confidence < drop_score_ || texts[k].text.empty()) continue;
      const LineOf& at = line_of[k];
      TextLine line{std::move(texts[k].text), texts[k].confidence, {}, at.page};
      for (size_t c = 0; c < 4; ++c) line.box[c] = {static_cast<float>(at.box[c].x), static_cast<float>(at.box[c].y)};
      placed[at.input].emplace_back(at.place, std::move(line));
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (!out[i].status.ok()) continue;
    std::stable_sort(placed[i].begin(), placed[i].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    out[i].lines.emplace();
    for (auto& [place, line] : placed[i]) {
      out[i].tokens += static_cast<uint32_t>(line.text.size());
      out[i].lines->push_back(std::move(line));
    }
  }
  return Status::Ok();
}

}  // namespace shoal::ocr
