#include "queue/s3_payload_store.h"

#include <curl/curl.h>

#include <ctime>

#include "common/sha256.h"

namespace shoal::queue {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The text of the first <tag>…</tag> in `xml` at or after `from`; npos-safe.
std::string_view Element(std::string_view xml, std::string_view tag, size_t from = 0, size_t* end = nullptr) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  const size_t a = xml.find(open, from);
  if (a == std::string_view::npos) return {};
  const size_t b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return {};
  if (end) *end = b + close.size();
  return xml.substr(a + open.size(), b - a - open.size());
}

// "2026-11-30T12:00:00.000Z" → Unix seconds; -1 when unreadable.
int64_t ParseIsoTime(std::string_view s) {
  std::tm tm{};
  const std::string text(s.substr(0, 19));
  if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return -1;
  return static_cast<int64_t>(timegm(&tm));
}

// An S3 error body's <Code> and <Message>, for error statuses.
std::string ErrorText(const std::string& body, long status) {
  std::string code(Element(body, "Code")), message(Element(body, "Message"));
  std::string out = "HTTP " + std::to_string(status);
  if (!code.empty()) out += " " + code;
  if (!message.empty()) out += ": " + message;
  return out;
}

}  // namespace

S3PayloadStore::S3PayloadStore(S3Location location, SigV4Credentials credentials)
    : location_(std::move(location)), credentials_(std::move(credentials)) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  const size_t scheme = location_.endpoint.find("://");
  host_ = scheme == std::string::npos ? location_.endpoint : location_.endpoint.substr(scheme + 3);
}

S3PayloadStore::~S3PayloadStore() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

std::string S3PayloadStore::Describe() const {
  return "s3 " + location_.endpoint + "/" + location_.bucket + "/" + location_.prefix;
}

void* S3PayloadStore::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void S3PayloadStore::Release(void* handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(handle);
}

Status S3PayloadStore::Send(std::string_view method, const std::string& path, const std::string& query,
                            std::string_view body, Response* response) {
  CURL* curl = static_cast<CURL*>(Acquire());
  if (!curl) return Internal("payload store: curl_easy_init failed");
  curl_easy_reset(curl);  // keeps the handle's open connections

  const std::string canonical_uri = UriEncode(path, /*keep_slash=*/true);
  const std::string payload_hash = Sha256Hex(body);
  const std::string date = AmzDateNow();
  SigV4Request sig{.method = method,
                   .host = host_,
                   .canonical_uri = canonical_uri,
                   .canonical_query = query,
                   .payload_sha256 = payload_hash,
                   .amz_date = date};
  const std::string url = location_.endpoint + canonical_uri + (query.empty() ? "" : "?" + query);

  curl_slist* headers = nullptr;
  for (const std::string& h :
       {"Host: " + host_, "x-amz-date: " + date, "x-amz-content-sha256: " + payload_hash,
        "Authorization: " + SigV4Authorization(sig, credentials_), std::string("Expect:"),
        std::string("Content-Type:")}) {
    headers = curl_slist_append(headers, h.c_str());
  }
  response->body.clear();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 60000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response->body);
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
    if (method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
  }
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
  curl_slist_free_all(headers);
  Release(curl);
  if (rc != CURLE_OK) {
    return Internal("payload store: " + std::string(method) + " " + url + ": " + curl_easy_strerror(rc));
  }
  return Status::Ok();
}

Status S3PayloadStore::Put(const std::string& key, std::string_view bytes) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  Response r;
  SHOAL_RETURN_IF_ERROR(Send("PUT", "/" + location_.bucket + "/" + location_.prefix + key, "", bytes, &r));
  if (r.status != 200) return Internal("payload store: PUT " + key + ": " + ErrorText(r.body, r.status));
  return Status::Ok();
}

Status S3PayloadStore::Get(const std::string& key, std::string* bytes) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  Response r;
  SHOAL_RETURN_IF_ERROR(Send("GET", "/" + location_.bucket + "/" + location_.prefix + key, "", "", &r));
  if (r.status == 404) return Status(Code::kNotFound, "payload " + key + " is gone (its request ended)");
  if (r.status != 200) return Internal("payload store: GET " + key + ": " + ErrorText(r.body, r.status));
  *bytes = std::move(r.body);
  return Status::Ok();
}

Status S3PayloadStore::Delete(const std::string& key) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  Response r;
  SHOAL_RETURN_IF_ERROR(Send("DELETE", "/" + location_.bucket + "/" + location_.prefix + key, "", "", &r));
  if (r.status != 204 && r.status != 200 && r.status != 404) {
    return Internal("payload store: DELETE " + key + ": " + ErrorText(r.body, r.status));
  }
  return Status::Ok();
}

Status S3PayloadStore::DeleteOlderThan(std::chrono::seconds age, size_t* deleted) {
  *deleted = 0;
  const int64_t cutoff = static_cast<int64_t>(std::time(nullptr)) - age.count();
  std::string token;
  do {
    // Query parameters in the order SigV4 wants: sorted by name.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + UriEncode(token, false) + "&";
    query += "list-type=2&prefix=" + UriEncode(location_.prefix, false);
    Response r;
    SHOAL_RETURN_IF_ERROR(Send("GET", "/" + location_.bucket, query, "", &r));
    if (r.status != 200) return Internal("payload store: listing: " + ErrorText(r.body, r.status));
    const std::string_view xml = r.body;
    size_t at = 0, end = 0;
    for (std::string_view entry; !(entry = Element(xml, "Contents", at, &end)).empty(); at = end) {
      const std::string_view key = Element(entry, "Key");
      const int64_t modified = ParseIsoTime(Element(entry, "LastModified"));
      if (!key.starts_with(location_.prefix) || modified < 0 || modified >= cutoff) continue;
      const std::string name(key.substr(location_.prefix.size()));
      if (!ValidPayloadKey(name)) continue;  // not one of ours
      SHOAL_RETURN_IF_ERROR(Delete(name));
      ++*deleted;
    }
    token = Element(xml, "IsTruncated") == "true" ? std::string(Element(xml, "NextContinuationToken")) : "";
  } while (!token.empty());
  return Status::Ok();
}

}  // namespace shoal::queue
