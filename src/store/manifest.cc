#include "store/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "common/sha256.h"

namespace shoal::store {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kDigestPrefix = "sha256:";

// Relative, '/'-separated, and no part empty, hidden, "." or "..".
bool SafeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part.front() == '.' || part.find('\0') != std::string_view::npos)
      return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

uint64_t ModelManifest::bytes() const {
  uint64_t n = 0;
  for (const auto& f : files) n += f.bytes;
  return n;
}

std::string ModelManifest::ToJson() const {
  json list = json::array();
  for (const auto& f : files)
    list.push_back(json{{"path", f.path}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  return json{{"files", std::move(list)}}.dump();
}

std::string ModelManifest::Digest() const {
  return std::string(kDigestPrefix) + Sha256Hex(ToJson());
}

std::string_view DigestHex(std::string_view digest) { return digest.substr(kDigestPrefix.size()); }

Result<std::string> Sha256OfFile(const std::string& path,
                                 const std::function<void(uint64_t)>& on_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("cannot read " + path + ": " + std::strerror(errno));
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    hash.Update(std::string_view(buffer.data(), n));
    if (on_bytes) on_bytes(n);
  }
  if (in.bad()) return InvalidInput("cannot read " + path + ": " + std::strerror(errno));
  return hash.FinishHex();
}

Result<ModelManifest> ManifestOfDirectory(const std::string& dir, const HashProgress& progress) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return InvalidInput(dir + ": not a directory");
  ModelManifest m;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) return InvalidInput("cannot list " + dir + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return InvalidInput("cannot list " + dir + ": " + ec.message());
    const std::string relative = fs::relative(it->path(), dir, ec).generic_string();
    if (it->path().filename().string().starts_with('.')) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;  // directories (walked), sockets and the like
    m.files.push_back(ManifestFile{
        .path = relative, .bytes = static_cast<uint64_t>(it->file_size(ec)), .sha256 = {}});
  }
  if (m.files.empty()) return InvalidInput(dir + ": no files to push");
  std::sort(m.files.begin(), m.files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  const uint64_t total = m.bytes();
  uint64_t done = 0;
  for (auto& f : m.files) {
    auto hex = Sha256OfFile((fs::path(dir) / f.path).string(), [&](uint64_t n) {
      done += n;
      if (progress) progress(done, total);
    });
    if (!hex.ok()) return hex.status();
    f.sha256 = std::move(hex).value();
  }
  return m;
}

Result<ModelManifest> ParseManifest(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object() || o.size() != 1 || !o.contains("files") || !o["files"].is_array()) {
    return InvalidInput("manifest: expected {\"files\": [...]}");
  }
  ModelManifest m;
  for (const json& f : o["files"]) {
    if (!f.is_object() || f.size() != 3 || !f.contains("path") || !f["path"].is_string() ||
        !f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("sha256") ||
        !f["sha256"].is_string()) {
      return InvalidInput("manifest: each file is {\"path\", \"bytes\", \"sha256\"}");
    }
    ManifestFile file{.path = f["path"].get<std::string>(),
                      .bytes = f["bytes"].get<uint64_t>(),
                      .sha256 = f["sha256"].get<std::string>()};
    if (!SafeRelativePath(file.path))
      return InvalidInput("manifest: unsafe path '" + file.path + "'");
    if (!IsSha256Hex(file.sha256))
      return InvalidInput("manifest: " + file.path + ": sha256 is not 64 hex digits");
    if (!m.files.empty() && m.files.back().path >= file.path) {
      return InvalidInput("manifest: paths must be sorted and unique");
    }
    m.files.push_back(std::move(file));
  }
  if (m.files.empty()) return InvalidInput("manifest: no files");
  return m;
}

}  // namespace shoal::store
