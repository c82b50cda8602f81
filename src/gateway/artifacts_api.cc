#include "gateway/artifacts_api.h"

#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "common/log.h"
#include "gateway/admin_bodies.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr std::string_view kArtifacts = "/v1/admin/artifacts";

// "files/{hex}", "parts/{hex}" or "manifests/{hex}" (after kArtifacts + "/").
struct ArtifactPath {
  std::string_view collection, hex;
};
std::optional<ArtifactPath> MatchPath(std::string_view rest) {
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return ArtifactPath{rest, {}};
  return ArtifactPath{rest.substr(0, slash), rest.substr(slash + 1)};
}

// POST files/{hex}: the parts' names, in order.
Result<std::vector<std::string>> PartsFromBody(const std::string& body) {
  SHOAL_ASSIGN_OR_RETURN(json o, ParseObject(body));
  auto parts = o.find("parts");
  if (o.size() != 1 || parts == o.end() || !parts->is_array()) {
    return InvalidInput("the body is {\"parts\": [\"<sha256>\", ...]}, the file's parts in order");
  }
  std::vector<std::string> names;
  for (const json& p : *parts) {
    if (!p.is_string()) return InvalidInput("parts: expected SHA-256s as strings");
    names.push_back(p.get<std::string>());
  }
  return names;
}

json PieceJson(std::string_view hex, uint64_t bytes) { return json{{"sha256", hex}, {"bytes", bytes}}; }

}  // namespace

ArtifactsApi::ArtifactsApi(store::ModelStore* store, size_t max_body_bytes)
    : store_(store), max_body_bytes_(max_body_bytes), uploads_(store) {
  loop_.Start();
}

ArtifactsApi::~ArtifactsApi() { loop_.Stop(); }

bool ArtifactsApi::Handles(std::string_view path) {
  return path.starts_with(kArtifacts) && (path.size() == kArtifacts.size() || path[kArtifacts.size()] == '/');
}

void ArtifactsApi::Handle(http::Request&& req, http::Responder respond) {
  loop_.Post([this, req = std::move(req), respond = std::move(respond)] {
    respond(Serve(req, "artifacts-" + RandomToken(8)));
  });
}

http::Response ArtifactsApi::Serve(const http::Request& req, const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  const std::string_view path = req.path;
  if (path == kArtifacts && req.method == "GET") {
    return http::JsonResponse(200, json{{"max_body_bytes", max_body_bytes_}}.dump());
  }
  auto match = path.size() > kArtifacts.size() ? MatchPath(path.substr(kArtifacts.size() + 1)) : std::nullopt;
  if (!match) return fail(Status(Code::kNotFound, "no route " + req.method + " " + req.path));
  if (!req.query.empty()) return fail(InvalidInput("the artifact routes take no query parameters"));
  const auto [collection, hex] = *match;
  const std::string route = req.method + " " + std::string(kArtifacts) + "/" + std::string(collection) +
                            (hex.empty() ? "" : "/{sha256}");

  if (collection == "manifests") {
    if (hex.empty() && req.method == "POST") {
      auto digest = uploads_.PutManifest(req.body);
      if (!digest.ok()) return fail(digest.status());
      auto manifest = store::ParseManifest(req.body);  // checked by PutManifest
      spdlog::info("admin: manifest {} stored ({} files, {:.1f} MB)", *digest, manifest->files.size(),
                   manifest->bytes() / 1e6);
      return http::JsonResponse(201, json{{"artifact", *digest},
                                          {"files", manifest->files.size()},
                                          {"bytes", manifest->bytes()}}
                                         .dump());
    }
    if (!hex.empty() && req.method == "GET") {
      if (Status s = store::ValidateSha256Hex(hex); !s.ok()) return fail(s);
      auto manifest = store_->Manifest("sha256:" + std::string(hex));
      return manifest.ok() ? http::JsonResponse(200, manifest->ToJson()) : fail(manifest.status());
    }
    return fail(Status(Code::kNotFound, "no route " + route + " (POST .../manifests, GET .../manifests/{sha256})"));
  }
  if ((collection != "files" && collection != "parts") || hex.empty()) {
    return fail(Status(Code::kNotFound, "no route " + req.method + " " + req.path));
  }
  const store::Piece kind = collection == "files" ? store::Piece::kFile : store::Piece::kPart;
  if (req.method == "GET") {
    auto size = uploads_.Size(kind, hex);
    return size.ok() ? http::JsonResponse(200, PieceJson(hex, *size).dump()) : fail(size.status());
  }
  if (req.method == "PUT") {
    auto stored = uploads_.Put(kind, hex, req.body);
    if (!stored.ok()) return fail(stored.status());
    json out = PieceJson(hex, req.body.size());
    out["stored"] = *stored;
    return http::JsonResponse(*stored ? 201 : 200, out.dump());
  }
  if (req.method == "POST" && kind == store::Piece::kFile) {
    auto parts = PartsFromBody(req.body);
    if (!parts.ok()) return fail(parts.status());
    auto bytes = uploads_.Join(hex, *parts);
    if (!bytes.ok()) return fail(bytes.status());
    spdlog::info("admin: file {} joined of {} parts ({:.1f} MB)", hex, parts->size(), *bytes / 1e6);
    return http::JsonResponse(201, PieceJson(hex, *bytes).dump());
  }
  return fail(Status(Code::kNotFound, "no route " + route));
}

}  // namespace shoal::gateway
