#include "runtime/process/frame.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace shoal::runtime_process {
namespace {

// Reads exactly n bytes; false with *eof when the peer closed before any.
Status ReadAll(int fd, char* p, size_t n, bool* eof) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      *eof = got == 0;
      return Internal(got == 0 ? "the peer closed the connection" : "the peer closed the connection mid-frame");
    } else if (errno != EINTR) {
      return Internal(std::string("reading the runtime socket: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    // MSG_NOSIGNAL: a peer gone is an error here, not a SIGPIPE.
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno != EINTR) {
      return Internal(std::string("writing the runtime socket: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadFrame(int fd, std::string* body) {
  unsigned char prefix[4];
  bool eof = false;
  SHOAL_RETURN_IF_ERROR(ReadAll(fd, reinterpret_cast<char*>(prefix), 4, &eof));
  const uint32_t n = (uint32_t{prefix[0]} << 24) | (uint32_t{prefix[1]} << 16) | (uint32_t{prefix[2]} << 8) | prefix[3];
  if (n > kMaxFrameBytes) {
    return Internal("a frame of " + std::to_string(n) + " bytes is over the limit of " +
                    std::to_string(kMaxFrameBytes));
  }
  body->resize(n);
  return ReadAll(fd, body->data(), n, &eof);
}

Status FrameWriter::Write(std::string_view body) {
  if (body.size() > kMaxFrameBytes) {
    return Internal("a frame of " + std::to_string(body.size()) + " bytes is over the limit of " +
                    std::to_string(kMaxFrameBytes));
  }
  const auto n = static_cast<uint32_t>(body.size());
  const char prefix[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                          static_cast<char>(n)};
  std::lock_guard lock(mu_);
  SHOAL_RETURN_IF_ERROR(WriteAll(fd_, prefix, 4));
  return WriteAll(fd_, body.data(), body.size());
}

}  // namespace shoal::runtime_process
