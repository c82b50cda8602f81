#include "store/artifact_uploads.h"

#include <algorithm>

#include "common/hex.h"
#include "common/sha256.h"

namespace shoal::store {
namespace {

std::string ObjectName(Piece kind, std::string_view hex) {
  return kind == Piece::kFile ? FileObjectName(hex) : PartObjectName(hex);
}

// The size of the stored piece `hex`, whose digest must be the one its name
// says; NOT_FOUND when there is none.
Result<uint64_t> StoredSize(queue::ObjectStore& objects, Piece kind, std::string_view hex) {
  auto info = objects.Info(ObjectName(kind, hex));
  if (!info.ok()) {
    if (info.status().code() != Code::kNotFound) return info.status();
    return Status(Code::kNotFound, std::string(kind == Piece::kFile ? "file " : "part ") +
                                       std::string(hex) + ": not in the model store");
  }
  if (info->digest != queue::ObjectDigestFromHex(hex)) {
    return Status(Code::kInternal, "the model store's " + info->name + " is not what its name says");
  }
  return info->size;
}

}  // namespace

std::string PartObjectName(std::string_view hex) { return "parts/" + std::string(hex); }

Status ValidateSha256Hex(std::string_view hex) {
  return IsSha256Hex(hex) ? Status::Ok()
                          : InvalidInput("expected a SHA-256 as 64 lowercase hex digits, got '" + std::string(hex) + "'");
}

Result<uint64_t> ArtifactUploads::Size(Piece kind, std::string_view hex) {
  SHOAL_RETURN_IF_ERROR(ValidateSha256Hex(hex));
  return StoredSize(store_->objects(), kind, hex);
}

Result<bool> ArtifactUploads::Put(Piece kind, std::string_view hex, std::string_view bytes) {
  SHOAL_RETURN_IF_ERROR(ValidateSha256Hex(hex));
  if (const std::string actual = Sha256Hex(bytes); actual != hex) {
    return InvalidInput("the body's SHA-256 is " + actual + ", not " + std::string(hex) +
                        " (" + std::to_string(bytes.size()) + " bytes arrived)");
  }
  auto present = StoredSize(store_->objects(), kind, hex);
  if (present.ok() && *present == bytes.size()) return false;
  if (!present.ok() && present.status().code() != Code::kNotFound) return present.status();
  SHOAL_RETURN_IF_ERROR(store_->objects().PutBytes(ObjectName(kind, hex), bytes).status());
  return true;
}

Result<uint64_t> ArtifactUploads::Join(std::string_view hex, const std::vector<std::string>& parts,
                                       const Progress& progress) {
  SHOAL_RETURN_IF_ERROR(ValidateSha256Hex(hex));
  if (parts.empty()) return InvalidInput("parts: a file is joined of one part or more");
  queue::ObjectStore& objects = store_->objects();
  uint64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (Status s = ValidateSha256Hex(parts[i]); !s.ok()) {
      return InvalidInput("parts[" + std::to_string(i) + "]: " + s.message());
    }
    auto size = StoredSize(objects, Piece::kPart, parts[i]);
    if (!size.ok()) {
      if (size.status().code() != Code::kNotFound) return size.status();
      return InvalidInput("parts[" + std::to_string(i) + "]: " + size.status().message() +
                          " (put it first)");
    }
    total += *size;
  }
  if (auto present = StoredSize(objects, Piece::kFile, hex); present.ok() && *present == total) {
    for (const std::string& p : parts) (void)objects.Delete(PartObjectName(p));
    return total;
  }

  // The parts are read one at a time into `part` and handed to Put; the
  // whole's SHA-256 is checked as the last part ends, so a wrong list fails
  // the put (which then keeps nothing) instead of storing a wrong file.
  Sha256 whole;
  size_t next = 0;
  std::string part;
  size_t at = 0;
  queue::ObjectStore::Source source = [&](char* buffer, size_t capacity) -> Result<size_t> {
    while (at == part.size()) {
      if (next == parts.size()) {
        if (const std::string actual = whole.FinishHex(); actual != hex) {
          return InvalidInput("the parts' bytes have SHA-256 " + actual + ", not " + std::string(hex));
        }
        return size_t{0};
      }
      SHOAL_ASSIGN_OR_RETURN(part, objects.Get(PartObjectName(parts[next++])));
      at = 0;
      whole.Update(part);
    }
    const size_t n = std::min(capacity, part.size() - at);
    std::copy_n(part.data() + at, n, buffer);
    at += n;
    return n;
  };
  Status stopped = Status::Ok();
  auto stored = objects.Put(FileObjectName(hex), source, [&](uint64_t bytes) {
    if (progress && stopped.ok()) stopped = progress("joining", bytes, total);
  });
  SHOAL_RETURN_IF_ERROR(stopped);
  if (!stored.ok()) return stored.status();
  for (const std::string& p : parts) (void)objects.Delete(PartObjectName(p));
  return stored->size;
}

Result<std::string> ArtifactUploads::PutManifest(std::string_view manifest_json) {
  SHOAL_ASSIGN_OR_RETURN(ModelManifest manifest, ParseManifest(manifest_json));
  if (manifest.files.empty()) return InvalidInput("manifest: a model has at least one file");
  std::vector<std::string> missing;
  for (const ManifestFile& f : manifest.files) {
    auto size = StoredSize(store_->objects(), Piece::kFile, f.sha256);
    if (size.ok() && *size == f.bytes) continue;
    if (!size.ok() && size.status().code() != Code::kNotFound) return size.status();
    missing.push_back(f.path + " (" + f.sha256 + ")");
  }
  if (!missing.empty()) {
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) names += (i ? ", " : "") + missing[i];
    if (missing.size() > 5) names += ", …";
    return InvalidInput("the model store lacks " + std::to_string(missing.size()) + " of the manifest's " +
                        std::to_string(manifest.files.size()) + " files: " + names + " (put them first)");
  }
  const std::string digest = manifest.Digest();
  SHOAL_RETURN_IF_ERROR(store_->objects().PutBytes(ManifestObjectName(digest), manifest.ToJson()).status());
  return digest;
}

}  // namespace shoal::store
