#include "queue/local_payload_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace shoal::queue {
namespace {

Status Errno(std::string_view what, const std::string& path) {
  return Internal("payload store: " + std::string(what) + " " + path + ": " + std::strerror(errno));
}

// Writes all of `bytes` to `fd`.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<PayloadStore>> LocalPayloadStore::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return Internal("payload store: cannot create directory " + dir + ": " + ec.message());
  }
  return std::unique_ptr<PayloadStore>(new LocalPayloadStore(dir));
}

Status LocalPayloadStore::Put(const std::string& key, std::string_view bytes) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  // A unique temporary name, renamed into place: readers see all or nothing.
  static std::atomic<uint64_t> counter{0};
  const std::string path = dir_ + "/" + key;
  const std::string tmp = dir_ + "/.tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter.fetch_add(1)) + "-" + key;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("creating", tmp);
  const bool written = WriteAll(fd, bytes);
  const int saved = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    errno = saved;
    return Errno("writing", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status s = Errno("renaming into", path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status LocalPayloadStore::Get(const std::string& key, std::string* bytes) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  const std::string path = dir_ + "/" + key;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status(Code::kNotFound, "payload " + key + " is gone (its request ended)");
    return Errno("opening", path);
  }
  struct stat st {};
  bytes->clear();
  if (::fstat(fd, &st) == 0) bytes->reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status s = Errno("reading", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    bytes->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return Status::Ok();
}

Status LocalPayloadStore::Delete(const std::string& key) {
  if (!ValidPayloadKey(key)) return InvalidInput("payload store: invalid key '" + key + "'");
  const std::string path = dir_ + "/" + key;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("deleting", path);
  return Status::Ok();
}

Status LocalPayloadStore::DeleteOlderThan(std::chrono::seconds age, size_t* deleted) {
  *deleted = 0;
  const auto cutoff = std::filesystem::file_time_type::clock::now() - age;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::error_code entry_ec;
    const auto mtime = entry.last_write_time(entry_ec);
    if (entry_ec || mtime >= cutoff || !entry.is_regular_file(entry_ec)) continue;
    if (std::filesystem::remove(entry.path(), entry_ec)) ++*deleted;
  }
  if (ec) return Internal("payload store: listing " + dir_ + ": " + ec.message());
  return Status::Ok();
}

}  // namespace shoal::queue
