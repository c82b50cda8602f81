#include "queue/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "common/hex.h"
#include "common/sha256.h"

namespace shoal::queue {
namespace {

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<const char*>(out), n);
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kDigits[u >> 4];
      out += kDigits[u & 15];
    }
  }
  return out;
}

std::string AmzDateNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

std::string SigV4Authorization(const SigV4Request& r, const SigV4Credentials& c) {
  std::vector<std::pair<std::string, std::string>> headers = r.extra_headers;
  headers.emplace_back("host", std::string(r.host));
  headers.emplace_back("x-amz-content-sha256", std::string(r.payload_sha256));
  headers.emplace_back("x-amz-date", std::string(r.amz_date));
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  std::string canonical;
  canonical.append(r.method).append("\n");
  canonical.append(r.canonical_uri).append("\n");
  canonical.append(r.canonical_query).append("\n");
  canonical.append(canonical_headers).append("\n");
  canonical.append(signed_headers).append("\n");
  canonical.append(r.payload_sha256);

  const std::string date(r.amz_date.substr(0, 8));
  const std::string scope = date + "/" + c.region + "/" + c.service + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(r.amz_date) + "\n" + scope + "\n" + Sha256Hex(canonical);
  const std::string key =
      Hmac(Hmac(Hmac(Hmac("AWS4" + c.secret_key, date), c.region), c.service), "aws4_request");
  const std::string mac = Hmac(key, to_sign);
  const std::string signature = LowerHex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  return "AWS4-HMAC-SHA256 Credential=" + c.access_key + "/" + scope + ",SignedHeaders=" + signed_headers +
         ",Signature=" + signature;
}

}  // namespace shoal::queue
