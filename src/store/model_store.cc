#include "store/model_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "catalog/names.h"
#include "common/file.h"
#include "common/sha256.h"
#include "queue/topology.h"

namespace shoal::store {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kResumeRecordEvery = 4 << 20;  // bytes between updates of the .resume record

Status OsError(const std::string& what) {
  return Status(Code::kInternal, what + ": " + std::strerror(errno));
}

// The .resume record: which version of the object the partial file holds and
// where its read stopped.
struct ResumeRecord {
  std::string nuid;
  queue::ReadPosition at;
};

std::optional<ResumeRecord> ReadResumeRecord(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  const json o = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object() || !o.contains("nuid") || !o["nuid"].is_string() || !o.contains("next_seq") ||
      !o["next_seq"].is_number_unsigned() || !o.contains("chunks") ||
      !o["chunks"].is_number_unsigned() || !o.contains("bytes") ||
      !o["bytes"].is_number_unsigned()) {
    return std::nullopt;
  }
  return ResumeRecord{
      o["nuid"].get<std::string>(),
      {o["next_seq"].get<uint64_t>(), o["chunks"].get<uint32_t>(), o["bytes"].get<uint64_t>()}};
}

Status WriteResumeRecord(const std::string& path, const ResumeRecord& r) {
  return WriteFileAtomically(
      path, json{{"nuid", r.nuid}, {"next_seq", r.at.next_seq}, {"chunks", r.at.chunks}, {"bytes", r.at.bytes}}.dump());
}

// Hashes the first `bytes` of `path` (what an interrupted fetch kept).
Status HashPrefix(const std::string& path, uint64_t bytes, Sha256* hash) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  while (bytes > 0 && in) {
    in.read(buffer.data(), static_cast<std::streamsize>(std::min<uint64_t>(buffer.size(), bytes)));
    const auto n = static_cast<uint64_t>(in.gcount());
    if (n == 0) break;
    hash->Update(std::string_view(buffer.data(), n));
    bytes -= n;
  }
  return bytes == 0 ? Status::Ok()
                    : Status(Code::kInternal, path + ": shorter than its .resume record says");
}

// Reads `source` in pieces (for ObjectStore::Put).
class FileSource {
 public:
  explicit FileSource(const std::string& path) : in_(path, std::ios::binary), path_(path) {}
  Result<size_t> operator()(char* buffer, size_t capacity) {
    if (!in_.is_open()) return InvalidInput("cannot read " + path_);
    in_.read(buffer, static_cast<std::streamsize>(capacity));
    if (in_.bad()) return InvalidInput("cannot read " + path_);
    return static_cast<size_t>(in_.gcount());
  }

 private:
  std::ifstream in_;
  std::string path_;
};

}  // namespace

std::string FileObjectName(std::string_view hex) { return "files/" + std::string(hex); }
std::string ManifestObjectName(std::string_view digest) {
  return "manifests/" + std::string(DigestHex(digest));
}

Result<std::unique_ptr<ModelStore>> ModelStore::Open(jsCtx* js, int replicas) {
  SHOAL_ASSIGN_OR_RETURN(auto objects,
                         queue::ObjectStore::Open(js, std::string(kArtifactBucket), replicas));
  return std::unique_ptr<ModelStore>(new ModelStore(std::move(objects)));
}

Result<std::unique_ptr<ModelStore>> ModelStore::Connect(const queue::ConnectOptions& options,
                                                        int replicas) {
  SHOAL_ASSIGN_OR_RETURN(queue::ConnectionPtr nc, queue::Connect(options));
  SHOAL_ASSIGN_OR_RETURN(queue::JsCtxPtr js, queue::NewJetStream(nc.get()));
  SHOAL_ASSIGN_OR_RETURN(auto store, Open(js.get(), replicas));
  store->nc_ = std::move(nc);
  store->js_ = std::move(js);
  return store;
}

Result<PushResult> ModelStore::Push(const std::string& dir, const Progress& progress) {
  Status stopped = Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(ModelManifest manifest,
                         ManifestOfDirectory(dir, [&](uint64_t done, uint64_t total) {
                           if (progress && stopped.ok()) stopped = progress("hashing", done, total);
                         }));
  SHOAL_RETURN_IF_ERROR(stopped);
  PushResult result;
  result.digest = manifest.Digest();
  const uint64_t total = manifest.bytes();
  uint64_t done = 0;
  for (const ManifestFile& f : manifest.files) {
    const std::string name = FileObjectName(f.sha256);
    auto present = objects_->Info(name);
    if (present.ok() && present->size == f.bytes &&
        present->digest == queue::ObjectDigestFromHex(f.sha256)) {
      result.bytes_present += f.bytes;
      done += f.bytes;
      continue;
    }
    if (!present.ok() && present.status().code() != Code::kNotFound) return present.status();
    FileSource source((fs::path(dir) / f.path).string());
    const uint64_t before = done;
    SHOAL_ASSIGN_OR_RETURN(queue::ObjectInfo stored,
                           objects_->Put(name, std::ref(source), [&](uint64_t bytes) {
                             done = before + bytes;
                             if (progress && stopped.ok())
                               stopped = progress("uploading", done, total);
                           }));
    SHOAL_RETURN_IF_ERROR(stopped);
    if (stored.digest != queue::ObjectDigestFromHex(f.sha256)) {
      return InvalidInput(f.path + " changed while it was pushed; push again");
    }
    result.bytes_sent += f.bytes;
  }
  SHOAL_RETURN_IF_ERROR(
      objects_->PutBytes(ManifestObjectName(result.digest), manifest.ToJson()).status());
  result.manifest = std::move(manifest);
  return result;
}

Result<ModelManifest> ModelStore::Manifest(std::string_view digest) {
  SHOAL_RETURN_IF_ERROR(ValidateArtifactDigest(digest));
  auto text = objects_->Get(ManifestObjectName(digest));
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) {
      return Status(Code::kNotFound, "the model store has no model " + std::string(digest));
    }
    return text.status();
  }
  if ("sha256:" + Sha256Hex(*text) != digest) {
    return Status(Code::kInternal,
                  "the manifest stored as " + std::string(digest) + " does not match its digest");
  }
  return ParseManifest(*text);
}

Result<FetchResult> ModelStore::FetchFile(const ManifestFile& file, const std::string& partial,
                                          const Progress& progress) {
  auto info = objects_->Info(FileObjectName(file.sha256));
  if (!info.ok()) {
    if (info.status().code() == Code::kNotFound) {
      return Status(Code::kNotFound,
                    "the model store lacks " + file.path + " (" + file.sha256 + ")");
    }
    return info.status();
  }
  if (info->size != file.bytes || info->digest != queue::ObjectDigestFromHex(file.sha256)) {
    return Status(Code::kInternal, "the store's " + FileObjectName(file.sha256) +
                                       " is not the manifest's " + file.path);
  }
  const std::string record_path = partial + ".resume";
  ResumeRecord record{info->nuid, {}};
  Sha256 hash;
  FetchResult result;
  std::error_code ec;
  if (auto kept = ReadResumeRecord(record_path); kept && kept->nuid == info->nuid &&
                                                 fs::exists(partial, ec) &&
                                                 fs::file_size(partial, ec) >= kept->at.bytes) {
    fs::resize_file(partial, kept->at.bytes, ec);
    if (!ec && HashPrefix(partial, kept->at.bytes, &hash).ok()) {
      record.at = kept->at;
      result.bytes_resumed = kept->at.bytes;
    } else {
      hash.Finish();  // start over
    }
  }
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return OsError("opening " + partial);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::ftruncate(fd, static_cast<off_t>(record.at.bytes)) != 0 ||
      ::lseek(fd, static_cast<off_t>(record.at.bytes), SEEK_SET) < 0) {
    return OsError("preparing " + partial);
  }
  uint64_t since_record = 0;
  Status read = objects_->Read(
      *info,
      [&](std::string_view chunk, const queue::ReadPosition& after) -> Status {
        for (size_t at = 0; at < chunk.size();) {
          const ssize_t n = ::write(fd, chunk.data() + at, chunk.size() - at);
          if (n < 0) return OsError("writing " + partial);
          at += static_cast<size_t>(n);
        }
        hash.Update(chunk);
        record.at = after;
        result.bytes_fetched += chunk.size();
        if ((since_record += chunk.size()) >= kResumeRecordEvery) {
          since_record = 0;
          SHOAL_RETURN_IF_ERROR(WriteResumeRecord(record_path, record));
        }
        return progress ? progress("fetching", after.bytes, file.bytes) : Status::Ok();
      },
      record.at);
  if (!read.ok()) {
    (void)WriteResumeRecord(record_path, record);  // everything written so far is kept
    return read;
  }
  fs::remove(record_path, ec);
  if (hash.FinishHex() != file.sha256) {
    fs::remove(partial, ec);
    return Status(Code::kInternal,
                  file.path + ": the fetched bytes do not match the manifest's SHA-256");
  }
  return result;
}

}  // namespace shoal::store
