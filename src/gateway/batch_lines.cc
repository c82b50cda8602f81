#include "gateway/batch_lines.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "common/ids.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr std::string_view kBodyRoutes[] = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                                            "/v1/embed",            "/v2/embed",       "/v1/rerank",
                                            "/v2/rerank"};
constexpr std::string_view kPathRoutes[] = {"/v1/encode", "/v1/score", "/v1/extract", "/v1/generate"};
constexpr size_t kMaxCustomId = 512;

bool IsPathRoute(std::string_view endpoint) {
  return std::find(std::begin(kPathRoutes), std::end(kPathRoutes), endpoint) != std::end(kPathRoutes);
}

bool UrlFits(std::string_view url, std::string_view endpoint) {
  if (!IsPathRoute(endpoint)) return url == endpoint;
  return url.size() > endpoint.size() + 1 && url.starts_with(endpoint) && url[endpoint.size()] == '/';
}

// Why `text` (one line) cannot be sent, or "" (and `line` filled).
std::string Check(std::string_view text, std::string_view endpoint, BatchLine* line) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return "not a JSON object";
  if (o.contains("custom_id") && o["custom_id"].is_string()) line->custom_id = o["custom_id"].get<std::string>();
  for (const auto& [field, value] : o.items()) {
    if (field != "custom_id" && field != "method" && field != "url" && field != "body") {
      return "unknown field '" + field + "' (a line has custom_id, method, url and body)";
    }
  }
  if (line->custom_id.empty()) return "custom_id: expected a non-empty string";
  if (line->custom_id.size() > kMaxCustomId) return "custom_id: longer than 512 bytes";
  if (o.value("method", json()) != "POST") return "method: expected \"POST\"";
  if (!o.value("url", json()).is_string()) return "url: expected a string";
  line->url = o["url"].get<std::string>();
  if (!UrlFits(line->url, endpoint)) {
    return "url: '" + line->url + "' is not this batch's endpoint " + std::string(endpoint) +
           (IsPathRoute(endpoint) ? "/{model}" : "");
  }
  const json& body = o.contains("body") ? o["body"] : json();
  if (!body.is_object()) return "body: expected a JSON object";
  if (body.value("stream", json(false)) != json(false)) return "body: \"stream\" is not supported in a batch";
  line->body = body.dump();
  return "";
}

}  // namespace

Status CheckBatchEndpoint(std::string_view endpoint) {
  if (std::find(std::begin(kBodyRoutes), std::end(kBodyRoutes), endpoint) != std::end(kBodyRoutes) ||
      IsPathRoute(endpoint)) {
    return Status::Ok();
  }
  return InvalidInput("endpoint: '" + std::string(endpoint) +
                      "' is not supported; expected /v1/chat/completions, /v1/completions, /v1/embeddings, "
                      "/v1/embed, /v2/embed, /v1/rerank, /v2/rerank, /v1/encode, /v1/score, /v1/extract or "
                      "/v1/generate");
}

Result<std::vector<BatchLine>> ParseBatchLines(std::string_view jsonl, std::string_view endpoint, size_t max_lines) {
  std::vector<BatchLine> lines;
  std::unordered_set<std::string> ids;
  bool any_valid = false;
  SHOAL_RETURN_IF_ERROR(ForEachJsonlLine(jsonl, [&](uint32_t number, std::string_view text) {
    if (lines.size() == max_lines) {
      return InvalidInput("the input file holds more than " + std::to_string(max_lines) +
                          " requests, a batch's limit: split it");
    }
    BatchLine line;
    line.number = number;
    line.error = Check(text, endpoint, &line);
    if (line.error.empty() && !ids.insert(line.custom_id).second) {
      line.error = "custom_id: '" + line.custom_id + "' is used by an earlier line";
    }
    if (!line.error.empty()) line.error = "line " + std::to_string(number) + ": " + line.error;
    any_valid = any_valid || line.error.empty();
    lines.push_back(std::move(line));
    return Status::Ok();
  }));
  if (lines.empty()) return InvalidInput("the input file holds no requests");
  if (!any_valid) return InvalidInput("no line of the input file is a request to send; " + lines.front().error);
  return lines;
}

namespace {
json LineObject(const BatchLine& line) {
  return {{"id", "batch_req_" + RandomToken(24)},
          {"custom_id", line.custom_id.empty() ? json(nullptr) : json(line.custom_id)}};
}
}  // namespace

std::string AnsweredLine(const BatchLine& line, int status_code, std::string_view request_id, std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) parsed = std::string(body);
  json o = LineObject(line);
  o["response"] = {{"status_code", status_code}, {"request_id", request_id}, {"body", std::move(parsed)}};
  o["error"] = nullptr;
  return o.dump();
}

std::string UnsentLine(const BatchLine& line, std::string_view code, std::string_view message) {
  json o = LineObject(line);
  o["response"] = nullptr;
  o["error"] = {{"code", code}, {"message", message}};
  return o.dump();
}

Result<int64_t> ParseCompletionWindow(std::string_view window) {
  const auto bad = [&] {
    return InvalidInput("completion_window: '" + std::string(window) +
                        "' is not a duration such as \"24h\", \"30m\" or \"90s\" (1 s to 24 h)");
  };
  if (window.size() < 2) return bad();
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(window.data(), window.data() + window.size() - 1, n);
  if (ec != std::errc() || end != window.data() + window.size() - 1 || n > 24 * 3600) return bad();
  const char unit = window.back();
  const int64_t seconds = unit == 'h' ? n * 3600 : unit == 'm' ? n * 60 : unit == 's' ? n : -1;
  if (seconds < 1 || seconds > 24 * 3600) return bad();
  return seconds;
}

}  // namespace shoal::gateway
