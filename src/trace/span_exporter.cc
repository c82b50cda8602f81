#include "trace/span_exporter.h"

#include <curl/curl.h>

#include <cctype>
#include <cstdlib>

#include "common/log.h"

namespace shoal::trace {
namespace {

constexpr char kTracesPath[] = "/v1/traces";
constexpr int kAttempts = 3;
constexpr auto kMaxBackoff = std::chrono::seconds(30);

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

size_t DiscardBody(char*, size_t size, size_t n, void*) { return size * n; }

// Stop cuts a request to a collector that does not answer.
int AbortWhenStopped(void* exporter, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const SpanExporter*>(exporter)->Aborted() ? 1 : 0;
}

// Retry-After as seconds (the HTTP-date form is read as no hint).
size_t ReadRetryAfter(char* data, size_t size, size_t n, void* out) {
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string head(line.substr(0, kName.size()));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == kName)
      *static_cast<long*>(out) =
          std::strtol(std::string(line.substr(kName.size())).c_str(), nullptr, 10);
  }
  return size * n;
}

}  // namespace

ExporterOptions ExporterOptionsFromEnvironment(std::string flag_endpoint, Resource resource) {
  ExporterOptions o;
  o.resource = std::move(resource);
  if (!flag_endpoint.empty()) {
    while (EndsWith(flag_endpoint, "/")) flag_endpoint.pop_back();
    o.endpoint = EndsWith(flag_endpoint, kTracesPath) ? flag_endpoint : flag_endpoint + kTracesPath;
  } else if (const char* traces = Env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    o.endpoint = traces;
  } else if (const char* base = Env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    std::string b = base;
    while (EndsWith(b, "/")) b.pop_back();
    o.endpoint = b + kTracesPath;
  }
  if (const char* headers = Env("OTEL_EXPORTER_OTLP_HEADERS")) {
    std::string_view rest = headers;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view pair = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      const size_t eq = pair.find('=');
      if (eq == std::string_view::npos) continue;
      o.headers.emplace_back(Trim(PercentDecode(pair.substr(0, eq))),
                             Trim(PercentDecode(pair.substr(eq + 1))));
    }
  }
  return o;
}

SpanExporter::SpanExporter(ExporterOptions options, MetricsRegistry& metrics)
    : options_(std::move(options)) {
  auto& spans =
      metrics.AddCounter("shoal_trace_spans_total",
                         "Spans finished, by what became of them: exported to the OTLP collector, "
                         "dropped (the export queue was full), failed (the collector refused them "
                         "or could not be reached).",
                         {"outcome"});
  exported_ = &spans.With({"exported"});
  dropped_ = &spans.With({"dropped"});
  failed_ = &spans.With({"failed"});
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  curl_ = curl_easy_init();
  thread_ = std::thread([this] { Run(); });
  spdlog::info("traces: exporting spans to {} (OTLP/HTTP JSON)", options_.endpoint);
}

SpanExporter::~SpanExporter() {
  Stop();
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

void SpanExporter::Record(Span span) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_ && queue_.size() < options_.max_queue) {
      queue_.push_back(std::move(span));
      if (queue_.size() >= options_.max_batch) wake_.notify_one();
      return;
    }
  }
  dropped_->Inc();
}

void SpanExporter::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  abort_at_ns_ = (SteadyClock::now() + options_.stop_timeout).time_since_epoch().count();
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void SpanExporter::Run() {
  std::vector<Span> batch;
  for (;;) {
    LogLosses();
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.interval,
                     [&] { return stopping_ || queue_.size() >= options_.max_batch; });
      if (stopping_ && (queue_.empty() || Aborted())) {
        // Out of time: what is left is lost, and counted.
        dropped_->Inc(static_cast<double>(queue_.size()));
        queue_.clear();
        break;
      }
      const size_t n = std::min(queue_.size(), options_.max_batch);
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + n));
      queue_.erase(queue_.begin(), queue_.begin() + n);
    }
    if (batch.empty()) continue;
    for (int attempt = 1;; ++attempt) {
      std::chrono::milliseconds retry_after{0};
      if (Export(batch, &retry_after)) {
        exported_->Inc(static_cast<double>(batch.size()));
        backoff_ = {};
        break;
      }
      std::unique_lock lock(mu_);
      if (attempt == kAttempts || retry_after.count() == 0 ||
          wake_.wait_for(lock, retry_after, [&] { return stopping_; })) {
        failed_->Inc(static_cast<double>(batch.size()));
        break;
      }
    }
    batch.clear();
  }
  LogLosses(/*now=*/true);
}

bool SpanExporter::Aborted() const {
  return SteadyClock::now().time_since_epoch().count() >=
         abort_at_ns_.load(std::memory_order_relaxed);
}

bool SpanExporter::Export(const std::vector<Span>& batch, std::chrono::milliseconds* retry_after) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (!curl) return false;
  const std::string body = EncodeOtlpJson(options_.resource, batch);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  for (const auto& [name, value] : options_.headers)
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  long server_retry_s = -1;
  curl_easy_reset(curl);  // keeps the connection to the collector
  curl_easy_setopt(curl, CURLOPT_URL, options_.endpoint.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, DiscardBody);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadRetryAfter);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &server_retry_s);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortWhenStopped);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (rc == CURLE_OK && status >= 200 && status < 300) return true;
  last_error_ =
      rc != CURLE_OK ? std::string(curl_easy_strerror(rc)) : "HTTP " + std::to_string(status);
  // The statuses OTLP/HTTP calls retryable, and a collector not reached.
  const bool retryable =
      rc != CURLE_OK || status == 429 || status == 502 || status == 503 || status == 504;
  if (retryable) {
    backoff_ = std::min<std::chrono::milliseconds>(
        kMaxBackoff, backoff_.count() == 0 ? std::chrono::milliseconds(1000) : 2 * backoff_);
    *retry_after = server_retry_s >= 0 ? std::min<std::chrono::milliseconds>(
                                             kMaxBackoff, std::chrono::seconds(server_retry_s))
                                       : backoff_;
    if (retry_after->count() == 0) *retry_after = std::chrono::milliseconds(1);
  }
  return false;
}

void SpanExporter::LogLosses(bool now) {
  const double lost = dropped_->value() + failed_->value();
  const auto t = SteadyClock::now();
  if (lost <= logged_losses_ || (!now && t < next_loss_log_)) return;
  spdlog::warn("traces: {} span(s) not exported ({}; collector {})", lost - logged_losses_,
               last_error_.empty() ? "the export queue was full" : "last error: " + last_error_,
               options_.endpoint);
  logged_losses_ = lost;
  next_loss_log_ = t + std::chrono::minutes(1);
}

}  // namespace shoal::trace
