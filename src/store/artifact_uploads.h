// ArtifactUploads: a model put into the model store a file at a time, by a
// client that reaches the store only through a gateway's admin API
// (gateway/artifacts_api.h, store/gateway_push.h) — an HTTP body at a time,
// each at most the gateway's --max-body-bytes. The objects are the ones
// ModelStore::Push writes, so a model pushed either way is the same model:
//
//   files/<sha256 hex>   a file, stored once whatever model holds it
//   parts/<sha256 hex>   a piece of a file larger than one body, kept until
//                        Join makes the file of its pieces
//   manifests/<hex>      the manifest, stored only when every file it
//                        lists is there with its size: a manifest that can
//                        be found has all its files, as after a Push
//
// Every piece is named by its SHA-256 and checked against it before it is
// kept, so an upload resumes by asking which pieces the store has (Size)
// and sends only the rest; sending one twice stores it once.
//
// Threading: thread-safe, blocking (store/model_store.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/model_store.h"

namespace shoal::store {

enum class Piece { kFile, kPart };

std::string PartObjectName(std::string_view sha256_hex);  // "parts/<hex>"

// INVALID_INPUT unless 64 lowercase hex digits.
Status ValidateSha256Hex(std::string_view hex);

class ArtifactUploads {
 public:
  explicit ArtifactUploads(ModelStore* store) : store_(store) {}  // not owned

  // The bytes of a stored piece; NOT_FOUND when the store has none.
  Result<uint64_t> Size(Piece kind, std::string_view sha256_hex);
  // Stores `bytes` as the piece `sha256_hex`: INVALID_INPUT when their
  // SHA-256 differs. False when the store had it already (nothing sent).
  Result<bool> Put(Piece kind, std::string_view sha256_hex, std::string_view bytes);
  // Makes file `sha256_hex` of stored parts, in order, checking the whole's
  // SHA-256 before the file is kept; the parts are removed after. Returns
  // its bytes. INVALID_INPUT naming a missing part, or for a wrong digest
  // (the parts stay, for a corrected list).
  Result<uint64_t> Join(std::string_view sha256_hex, const std::vector<std::string>& parts,
                        const Progress& progress = nullptr);
  // Stores a manifest (its canonical JSON, store/manifest.h) once every
  // file it lists is in the store with its size; returns its digest.
  // INVALID_INPUT naming the files the store lacks.
  Result<std::string> PutManifest(std::string_view manifest_json);

 private:
  ModelStore* const store_;
};

}  // namespace shoal::store
