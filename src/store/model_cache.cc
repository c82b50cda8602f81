#include "store/model_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "catalog/names.h"
#include "common/file.h"
#include "common/log.h"
#include "common/sha256.h"

namespace shoal::store {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An flock on a file, released with the object.
class FileLock {
 public:
  static Result<FileLock> Take(const std::string& path, int operation) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status(Code::kInternal, "opening " + path + ": " + std::strerror(errno));
    if (::flock(fd, operation) != 0) {
      const int e = errno;
      ::close(fd);
      return Status(e == EWOULDBLOCK ? Code::kNoCapacity : Code::kInternal,
                    "locking " + path + ": " + std::strerror(e));
    }
    return FileLock(fd);
  }
  FileLock(FileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  int Release() { return std::exchange(fd_, -1); }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// What identifies a file's bytes without reading them (see the header).
std::string StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

CacheLease::~CacheLease() { ::close(fd_); }

Result<CacheVerify> ParseCacheVerify(std::string_view name) {
  if (name == "changed") return CacheVerify::kChanged;
  if (name == "always") return CacheVerify::kAlways;
  return InvalidInput("cache verification '" + std::string(name) + "': expected changed or always");
}

std::string DefaultModelCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/shoal/models";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/shoal/models";
  return "/var/cache/shoal/models";
}

// Its directories (again at each use: an operator may have emptied it).
static Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"models", "manifests", "stamps", "leases", "partial"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return InvalidInput("cannot make the model cache " + dir + ": " + ec.message());
  }
  return Status::Ok();
}

Result<std::unique_ptr<ModelCache>> ModelCache::Open(CacheOptions options, ModelStore* store) {
  if (options.dir.empty()) return InvalidInput("the model cache needs a directory");
  SHOAL_RETURN_IF_ERROR(MakeDirectories(options.dir));
  options.dir = fs::absolute(options.dir).string();
  return std::unique_ptr<ModelCache>(new ModelCache(std::move(options), store));
}

CacheStats ModelCache::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

Result<ModelManifest> ModelCache::LoadManifest(std::string_view digest) {
  const std::string path = options_.dir + "/manifests/" + std::string(DigestHex(digest)) + ".json";
  if (auto text = ReadFile(path); text.ok() && "sha256:" + Sha256Hex(*text) == digest)
    return ParseManifest(*text);
  return store_->Manifest(digest);
}

std::vector<ModelCache::Entry> ModelCache::Entries() const {
  std::vector<Entry> entries;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(options_.dir + "/manifests", ec)) {
    if (f.path().extension() != ".json") continue;
    auto text = ReadFile(f.path().string());
    auto manifest = text.ok() ? ParseManifest(*text) : Result<ModelManifest>(text.status());
    entries.push_back(Entry{f.path().stem().string(), manifest.ok() ? manifest->bytes() : 0,
                            fs::last_write_time(f.path(), ec)});
  }
  return entries;
}

uint64_t ModelCache::UsedBytes() const {
  uint64_t used = 0;
  for (const Entry& e : Entries()) used += e.bytes;
  return used;
}

Status ModelCache::MakeRoom(std::string_view keep_hex, uint64_t bytes) {
  std::vector<Entry> entries = Entries();
  std::erase_if(entries, [&](const Entry& e) { return e.hex == keep_hex; });
  uint64_t used = 0;
  for (const Entry& e : entries) used += e.bytes;
  std::error_code ec;
  // A directory without its manifest is a fetch that died half-way: its
  // files are not counted, so they go (resumable fetches live in partial/).
  for (const auto& d : fs::directory_iterator(options_.dir + "/models", ec)) {
    const std::string hex = d.path().filename().string();
    if (hex != keep_hex && !fs::exists(options_.dir + "/manifests/" + hex + ".json", ec))
      fs::remove_all(d.path(), ec);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (used + bytes <= options_.budget_bytes) break;
    const std::string lease = options_.dir + "/leases/" + e.hex;
    auto held = FileLock::Take(lease, LOCK_EX | LOCK_NB);
    if (!held.ok()) continue;  // in use
    fs::remove_all(options_.dir + "/models/" + e.hex, ec);
    fs::remove(options_.dir + "/manifests/" + e.hex + ".json", ec);
    fs::remove(options_.dir + "/stamps/" + e.hex + ".json", ec);
    fs::remove(lease, ec);
    used -= e.bytes;
    spdlog::info("model cache: removed sha256:{} ({:.1f} MB, least recently used) to make room",
                 e.hex, e.bytes / 1e6);
    std::lock_guard lock(stats_mu_);
    ++stats_.evicted;
  }
  if (used + bytes > options_.budget_bytes) {
    return Status(Code::kNoCapacity,
                  "the model cache's budget of " + std::to_string(options_.budget_bytes) +
                      " bytes cannot hold " + std::to_string(bytes) + " more: " +
                      std::to_string(used) + " bytes are models in use (--cache-bytes)");
  }
  return Status::Ok();
}

Status ModelCache::Verify(std::string_view hex, const ModelManifest& manifest,
                          const Progress& progress, bool* fetched) {
  const fs::path root = fs::path(options_.dir) / "models" / std::string(hex);
  std::error_code ec;
  fs::create_directories(root, ec);
  // Files the manifest does not name would be seen by the runtime: remove them.
  std::vector<fs::path> strays;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string relative = fs::relative(it->path(), root, ec).generic_string();
    if (it->is_directory(ec)) continue;
    const bool named = std::any_of(manifest.files.begin(), manifest.files.end(),
                                   [&](const ManifestFile& f) { return f.path == relative; });
    if (!named) strays.push_back(it->path());
  }
  for (const auto& p : strays) fs::remove(p, ec);

  const std::string stamps_path = options_.dir + "/stamps/" + std::string(hex) + ".json";
  json stamps = json::object();
  if (auto text = ReadFile(stamps_path); text.ok())
    stamps = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!stamps.is_object()) stamps = json::object();
  json checked = json::object();  // the stamps written back

  const uint64_t total = manifest.bytes();
  uint64_t before = 0;
  for (const ManifestFile& f : manifest.files) {
    const fs::path path = root / f.path;
    if (fs::exists(path, ec)) {
      const std::string stamp = StampOf(path.string());
      const bool unchanged = options_.verify == CacheVerify::kChanged && !stamp.empty() &&
                             stamps.contains(f.path) && stamps[f.path] == stamp;
      bool whole = unchanged;
      if (!unchanged && fs::file_size(path, ec) == f.bytes) {
        auto hex_now = Sha256OfFile(path.string());
        whole = hex_now.ok() && *hex_now == f.sha256;
        std::lock_guard lock(stats_mu_);
        stats_.bytes_hashed += f.bytes;
      }
      if (whole) {
        checked[f.path] = stamp;
        before += f.bytes;
        if (progress) SHOAL_RETURN_IF_ERROR(progress("verifying", before, total));
        continue;
      }
      spdlog::warn(
          "model cache: {} of sha256:{} is corrupt (its bytes differ from the manifest's); "
          "fetching it again",
          f.path, hex);
      fs::remove(path, ec);
      std::lock_guard lock(stats_mu_);
      ++stats_.corrupt_files;
    }
    const std::string partial = options_.dir + "/partial/" + f.sha256;
    SHOAL_ASSIGN_OR_RETURN(
        FetchResult r,
        store_->FetchFile(f, partial, [&](std::string_view stage, uint64_t done, uint64_t) {
          return progress ? progress(stage, before + done, total) : Status::Ok();
        }));
    fs::create_directories(path.parent_path(), ec);
    fs::rename(partial, path, ec);
    if (ec) return Status(Code::kInternal, "placing " + path.string() + ": " + ec.message());
    checked[f.path] = StampOf(path.string());  // its bytes were hashed as they came
    before += f.bytes;
    *fetched = true;
    std::lock_guard lock(stats_mu_);
    stats_.bytes_fetched += r.bytes_fetched;
    stats_.bytes_resumed += r.bytes_resumed;
  }
  return WriteFileAtomically(stamps_path, checked.dump());
}

Result<std::unique_ptr<CacheLease>> ModelCache::Acquire(std::string_view digest,
                                                        const Progress& progress) {
  SHOAL_RETURN_IF_ERROR(ValidateArtifactDigest(digest));
  const std::string hex(DigestHex(digest));
  SHOAL_RETURN_IF_ERROR(MakeDirectories(options_.dir));
  SHOAL_ASSIGN_OR_RETURN(FileLock dir_lock, FileLock::Take(options_.dir + "/lock", LOCK_EX));
  SHOAL_ASSIGN_OR_RETURN(ModelManifest manifest, LoadManifest(digest));
  if (manifest.bytes() > options_.budget_bytes) {
    return Status(Code::kNoCapacity,
                  std::string(digest) + " holds " + std::to_string(manifest.bytes()) +
                      " bytes, more than the model cache's budget (--cache-bytes)");
  }
  // Held before room is made, so that no one removes this entry meanwhile.
  SHOAL_ASSIGN_OR_RETURN(FileLock lease, FileLock::Take(options_.dir + "/leases/" + hex, LOCK_SH));
  SHOAL_RETURN_IF_ERROR(MakeRoom(hex, manifest.bytes()));
  bool fetched = false;
  SHOAL_RETURN_IF_ERROR(Verify(hex, manifest, progress, &fetched));
  // Written last: an entry with its manifest is whole. Rewriting it also
  // marks the entry used now (LRU).
  SHOAL_RETURN_IF_ERROR(
      WriteFileAtomically(options_.dir + "/manifests/" + hex + ".json", manifest.ToJson()));
  {
    std::lock_guard lock(stats_mu_);
    ++(fetched ? stats_.fetches : stats_.hits);
  }
  return std::make_unique<CacheLease>(options_.dir + "/models/" + hex, lease.Release());
}

}  // namespace shoal::store
