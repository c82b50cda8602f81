// ModelCache: a worker's local copies of models from the store
// (model_store.h), on its disk, within a byte budget.
//
//   <dir>/lock                   flock'd while entries are added or removed,
//                                so processes may share one cache directory
//   <dir>/models/<hex>/          an entry: the model's files at their paths
//   <dir>/manifests/<hex>.json   its manifest, written once the entry is
//                                whole (rewritten at each use: its mtime
//                                is the last use)
//   <dir>/stamps/<hex>.json      each file's identity when its SHA-256 was
//                                last checked: size, inode, mtime, ctime
//   <dir>/leases/<hex>           flock'd shared by every holder of the entry
//   <dir>/partial/<file hex>     fetches under way, with their .resume records
//
// Acquire(digest) gives a directory to load from, checked against the
// manifest first: a file that is missing or whose bytes differ (a corrupted
// disk, a hand edit) is fetched again, and files the manifest does not name
// are removed, so bytes whose digest differs are never loaded. A file's
// SHA-256 is computed again unless its stamp is unchanged (kChanged, the
// default): any write, truncation, rename or touch through the kernel moves
// a file's ctime, which no user can set back, so an unchanged stamp means
// the bytes hashed before. kAlways hashes every file at every load (for
// disks that may rot under the file system), at the cost of reading it. The Lease keeps the entry
// on disk (a shared flock on its lease file) until it goes; room for a new entry is made by
// removing the least recently used entries no process holds. A model larger than the budget, or one
// that fits only by removing entries in use, is refused (NO_CAPACITY).
//
// Threading: thread-safe; Acquire blocks (hashing, fetching) and runs one at
// a time per cache directory, across processes.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/model_store.h"

namespace shoal::store {

enum class CacheVerify : uint8_t { kChanged, kAlways };
Result<CacheVerify> ParseCacheVerify(std::string_view name);  // "changed", "always"

struct CacheOptions {
  std::string dir;
  uint64_t budget_bytes = 20ull << 30;
  CacheVerify verify = CacheVerify::kChanged;
};

// Counters for metrics and tests.
struct CacheStats {
  uint64_t hits = 0;     // acquired with every file already there and whole
  uint64_t fetches = 0;  // acquired after fetching one file or more
  uint64_t bytes_fetched = 0;
  uint64_t bytes_resumed = 0;  // kept from interrupted fetches
  uint64_t corrupt_files = 0;  // cached files whose bytes differed, fetched again
  uint64_t bytes_hashed = 0;   // cached files checked by their SHA-256
  uint64_t evicted = 0;        // entries removed for room
};

// An entry in use: its directory stays until the lease goes.
class CacheLease {
 public:
  CacheLease(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~CacheLease();
  CacheLease(const CacheLease&) = delete;
  CacheLease& operator=(const CacheLease&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_;
};

// $XDG_CACHE_HOME/shoal/models, else ~/.cache/shoal/models.
std::string DefaultModelCacheDir();

class ModelCache {
 public:
  // `store` outlives the cache.
  static Result<std::unique_ptr<ModelCache>> Open(CacheOptions options, ModelStore* store);

  Result<std::unique_ptr<CacheLease>> Acquire(std::string_view digest,
                                              const Progress& progress = nullptr);

  CacheStats stats() const;
  const CacheOptions& options() const { return options_; }
  // Bytes the entries on disk hold.
  uint64_t UsedBytes() const;

 private:
  ModelCache(CacheOptions options, ModelStore* store)
      : options_(std::move(options)), store_(store) {}
  // An entry on disk: its digest's hex, its bytes, its last use.
  struct Entry {
    std::string hex;
    uint64_t bytes = 0;
    std::filesystem::file_time_type used;
  };
  std::vector<Entry> Entries() const;
  Result<ModelManifest> LoadManifest(std::string_view digest);
  Status MakeRoom(std::string_view keep_hex, uint64_t bytes);
  Status Verify(std::string_view hex, const ModelManifest& manifest, const Progress& progress,
                bool* fetched);

  CacheOptions options_;
  ModelStore* store_;
  mutable std::mutex stats_mu_;
  CacheStats stats_;  // guarded by stats_mu_
};

}  // namespace shoal::store
