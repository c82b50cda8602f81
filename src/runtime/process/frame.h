// Frames of the runtime protocol (docs/runtime-protocol.md): a 4-byte
// big-endian length, then that many bytes holding one MessagePack map.
//
// Blocking reads and writes on a stream socket. A FrameWriter may be shared
// by threads (one frame is written whole under its lock); a socket has one
// reader.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::runtime_process {

// The largest frame either side sends or accepts (a batch of 64 inputs of
// 1 MiB of text each fits with room).
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// Reads one frame's body into *body. Returns INTERNAL naming what was wrong
// ("the peer closed the connection", "a frame of N bytes is over the limit
// of M"); the connection is unusable after any failure.
Status ReadFrame(int fd, std::string* body);

// Writes `body` as one frame; safe to call from several threads.
class FrameWriter {
 public:
  explicit FrameWriter(int fd) : fd_(fd) {}
  Status Write(std::string_view body);

 private:
  int fd_;
  std::mutex mu_;
};

}  // namespace shoal::runtime_process
