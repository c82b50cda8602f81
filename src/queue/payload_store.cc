#include "queue/payload_store.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "queue/local_payload_store.h"
#include "queue/s3_payload_store.h"

namespace shoal::queue {
namespace {

std::string Env(const char* name, std::string fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The value of `name=` in a query string ("a=1&b=2"); "" when absent.
std::string QueryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.size() > name.size() && pair.starts_with(name) && pair[name.size()] == '=') {
      return std::string(pair.substr(name.size() + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

Result<std::unique_ptr<PayloadStore>> OpenS3(std::string_view rest) {
  // rest: bucket[/prefix][?endpoint=...&region=...]
  const size_t q = rest.find('?');
  const std::string_view query = q == std::string_view::npos ? "" : rest.substr(q + 1);
  const std::string_view where = rest.substr(0, q);
  const size_t slash = where.find('/');
  S3Location loc;
  loc.bucket = std::string(where.substr(0, slash));
  if (slash != std::string_view::npos) loc.prefix = std::string(where.substr(slash + 1));
  if (!loc.prefix.empty() && loc.prefix.back() != '/') loc.prefix += '/';
  if (loc.bucket.empty()) return InvalidInput("--payload-store s3://BUCKET[/PREFIX]: the bucket is missing");
  SigV4Credentials creds;
  creds.region = QueryParam(query, "region");
  if (creds.region.empty()) creds.region = Env("AWS_REGION", Env("AWS_DEFAULT_REGION", "us-east-1"));
  loc.endpoint = QueryParam(query, "endpoint");
  if (loc.endpoint.empty()) loc.endpoint = Env("AWS_ENDPOINT_URL", "https://s3." + creds.region + ".amazonaws.com");
  while (!loc.endpoint.empty() && loc.endpoint.back() == '/') loc.endpoint.pop_back();
  if (!loc.endpoint.starts_with("http://") && !loc.endpoint.starts_with("https://")) {
    return InvalidInput("payload store endpoint '" + loc.endpoint + "': expected http:// or https://");
  }
  creds.access_key = Env("AWS_ACCESS_KEY_ID");
  creds.secret_key = Env("AWS_SECRET_ACCESS_KEY");
  // Fail closed: an unsigned request would be refused later, on the data path.
  if (creds.access_key.empty() || creds.secret_key.empty()) {
    return InvalidInput("payload store s3://" + loc.bucket +
                        ": set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  return std::unique_ptr<PayloadStore>(new S3PayloadStore(std::move(loc), std::move(creds)));
}

}  // namespace

bool ValidPayloadKey(std::string_view key) {
  if (key.empty() || key.size() > 200 || key.front() == '.') return false;
  for (const char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

std::string DefaultPayloadStoreUrl() {
  return (std::filesystem::temp_directory_path() / "shoal-payloads").string();
}

Result<std::unique_ptr<PayloadStore>> OpenPayloadStore(const std::string& url) {
  std::string_view u = url;
  if (u.starts_with("s3://")) return OpenS3(u.substr(5));
  if (u.starts_with("dir:")) u.remove_prefix(4);
  if (u.starts_with("file://")) u.remove_prefix(7);
  if (u.empty() || u.front() != '/') {
    return InvalidInput("--payload-store '" + url + "': expected an absolute directory or s3://bucket[/prefix]");
  }
  return LocalPayloadStore::Open(std::string(u));
}

}  // namespace shoal::queue
