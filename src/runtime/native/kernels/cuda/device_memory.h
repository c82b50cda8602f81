// Owned memory on an NVIDIA GPU (DeviceBuffer) and page-locked host memory
// for transfers to and from it (PinnedBuffer), plus what a process can ask
// about the GPUs it sees.
//
// Both buffers are move-only owners that free on destruction; allocation
// failures are Status values. All device memory is plain cudaMalloc (never
// managed memory), so what a model holds is exactly what it allocated and
// what memory_bytes() reports.
//
// Threading: a buffer is used by one thread at a time; the free functions are
// safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace shoal::native::cuda {

// GPUs this process can use; 0 without a driver or a device (never fails).
int DeviceCount();

struct DeviceInfo {
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  size_t total_bytes = 0;
  size_t free_bytes = 0;
};
Result<DeviceInfo> DescribeDevice(int device);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Frees what is held, then allocates `bytes` on the current device.
  Status Allocate(size_t bytes);
  // Allocates and copies `bytes` from host memory (synchronously).
  Status Upload(const void* host, size_t bytes);

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void Free();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status Allocate(size_t bytes);

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void Free();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace shoal::native::cuda
