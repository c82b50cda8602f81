// ModelManifest: what a model directory holds, file by file — relative path,
// size and SHA-256 — and the digest of that list, which names the model's
// bytes everywhere: the store keeps the manifest under it, the catalog
// records it (ModelSpec::artifact), workers fetch and verify by it.
//
//   {"files": [{"bytes": 612, "path": "config.json", "sha256": "<hex>"}, ...]}
//
// Files are sorted by path; the JSON is written with sorted keys and no
// spaces, so one directory always gives one digest: "sha256:" + the hex
// SHA-256 of that text. A directory's files are its regular files at any
// depth, links followed, except paths with a part that starts with '.'
// (.git, .cache: tools' state, not the model).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::store {

struct ManifestFile {
  std::string path;  // relative, '/'-separated, no '.' or '..' parts
  uint64_t bytes = 0;
  std::string sha256;  // lowercase hex
};

struct ModelManifest {
  std::vector<ManifestFile> files;  // sorted by path

  uint64_t bytes() const;
  std::string ToJson() const;  // the canonical text the digest is taken over
  std::string Digest() const;  // "sha256:<hex>"
};

// Called while files are hashed: bytes hashed so far, of `total`.
using HashProgress = std::function<void(uint64_t done, uint64_t total)>;

// Reads and hashes every file of `dir`.
Result<ModelManifest> ManifestOfDirectory(const std::string& dir,
                                          const HashProgress& progress = nullptr);

// Strict: the canonical fields, safe relative paths, sorted and unique,
// hex digests.
Result<ModelManifest> ParseManifest(std::string_view json);

// The hex part of a digest (catalog/names.h ValidateArtifactDigest).
std::string_view DigestHex(std::string_view digest);

// The SHA-256 (hex) of the file at `path`, read in pieces.
Result<std::string> Sha256OfFile(const std::string& path,
                                 const std::function<void(uint64_t)>& on_bytes = nullptr);

}  // namespace shoal::store
