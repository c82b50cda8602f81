#include "admin/gateway_push.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/sha256.h"
#include "store/manifest.h"

namespace shoal::admin {
namespace {

using nlohmann::json;

constexpr std::string_view kArtifacts = "/v1/admin/artifacts";

// Whether the store holds the piece at `path` with `bytes` bytes.
Result<bool> Holds(GatewayClient& gateway, const std::string& path, uint64_t bytes) {
  auto answer = gateway.Call("GET", path);
  if (!answer.ok()) {
    if (answer.status().code() == Code::kNotFound) return false;
    return answer.status();
  }
  const json o = json::parse(*answer, nullptr, /*allow_exceptions=*/false);
  return o.is_object() && o.value("bytes", uint64_t{0}) == bytes;
}

// Sends one file (`f`, read from `dir`) a piece at a time; `on_bytes`
// after each piece with the bytes sent of it so far.
Status SendFile(GatewayClient& gateway, const std::string& dir, const store::ManifestFile& f, uint64_t part_bytes,
                const std::function<Status(uint64_t)>& on_bytes) {
  const std::string file_path = std::string(kArtifacts) + "/files/" + f.sha256;
  const std::string local = (std::filesystem::path(dir) / f.path).string();
  std::ifstream in(local, std::ios::binary);
  if (!in) return InvalidInput("cannot read " + local);
  std::string piece(std::min<uint64_t>(f.bytes, part_bytes), '\0');
  if (f.bytes <= part_bytes) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (static_cast<uint64_t>(in.gcount()) != f.bytes) return InvalidInput(local + " changed while it was pushed");
    SHOAL_RETURN_IF_ERROR(gateway.Call("PUT", file_path, piece, "application/octet-stream").status());
    return on_bytes(f.bytes);
  }
  json parts = json::array();
  for (uint64_t sent = 0; sent < f.bytes;) {
    piece.resize(std::min<uint64_t>(part_bytes, f.bytes - sent));
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (static_cast<uint64_t>(in.gcount()) != piece.size()) return InvalidInput(local + " changed while it was pushed");
    const std::string hex = Sha256Hex(piece);
    const std::string part_path = std::string(kArtifacts) + "/parts/" + hex;
    SHOAL_ASSIGN_OR_RETURN(bool held, Holds(gateway, part_path, piece.size()));
    if (!held) SHOAL_RETURN_IF_ERROR(gateway.Call("PUT", part_path, piece, "application/octet-stream").status());
    parts.push_back(hex);
    sent += piece.size();
    SHOAL_RETURN_IF_ERROR(on_bytes(sent));
  }
  return gateway.Call("POST", file_path, json{{"parts", parts}}.dump()).status();
}

}  // namespace

Result<store::PushResult> PushThroughGateway(GatewayClient& gateway, const std::string& dir,
                                             const store::Progress& progress, uint64_t part_bytes) {
  if (part_bytes == 0) return InvalidInput("part_bytes: expected more than 0");
  SHOAL_ASSIGN_OR_RETURN(std::string limits, gateway.Call("GET", std::string(kArtifacts)));
  const json l = json::parse(limits, nullptr, /*allow_exceptions=*/false);
  if (!l.is_object() || !l.contains("max_body_bytes") || !l["max_body_bytes"].is_number_unsigned() ||
      l["max_body_bytes"].get<uint64_t>() == 0) {
    return Internal("GET " + std::string(kArtifacts) + ": expected {\"max_body_bytes\"}, got " + limits);
  }
  part_bytes = std::min(part_bytes, l["max_body_bytes"].get<uint64_t>());
  Status stopped = Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(store::ModelManifest manifest,
                         store::ManifestOfDirectory(dir, [&](uint64_t done, uint64_t total) {
                           if (progress && stopped.ok()) stopped = progress("hashing", done, total);
                         }));
  SHOAL_RETURN_IF_ERROR(stopped);
  store::PushResult result;
  const uint64_t total = manifest.bytes();
  uint64_t done = 0;
  for (const store::ManifestFile& f : manifest.files) {
    SHOAL_ASSIGN_OR_RETURN(bool held,
                           Holds(gateway, std::string(kArtifacts) + "/files/" + f.sha256, f.bytes));
    if (held) {
      result.bytes_present += f.bytes;
      done += f.bytes;
      continue;
    }
    const uint64_t before = done;
    SHOAL_RETURN_IF_ERROR(SendFile(gateway, dir, f, part_bytes, [&](uint64_t sent) {
      done = before + sent;
      return progress ? progress("uploading", done, total) : Status::Ok();
    }));
    result.bytes_sent += f.bytes;
  }
  SHOAL_ASSIGN_OR_RETURN(std::string answer,
                         gateway.Call("POST", std::string(kArtifacts) + "/manifests", manifest.ToJson()));
  const json o = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  result.digest = manifest.Digest();
  if (!o.is_object() || o.value("artifact", "") != result.digest) {
    return Internal("the gateway stored the manifest as " + (o.is_object() ? o.value("artifact", "?") : answer) +
                    ", not " + result.digest);
  }
  result.manifest = std::move(manifest);
  return result;
}

}  // namespace shoal::admin
