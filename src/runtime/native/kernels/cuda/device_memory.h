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

#include <cuda_runtime_api.h>

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

// Where a buffer's memory comes from: the GPU (cudaMalloc) or page-locked
// host memory (cudaMallocHost).
struct DeviceMemory {
  static cudaError_t Allocate(void** p, size_t bytes);
  static void Free(void* p);
};
struct PinnedMemory {
  static cudaError_t Allocate(void** p, size_t bytes);
  static void Free(void* p);
};

// A move-only owner of `Memory`'s memory; frees on destruction.
template <class Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  ~CudaBuffer() { Free(); }
  CudaBuffer(CudaBuffer&& o) noexcept;
  CudaBuffer& operator=(CudaBuffer&& o) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  // Frees what is held, then allocates `bytes`.
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

using DeviceBuffer = CudaBuffer<DeviceMemory>;
using PinnedBuffer = CudaBuffer<PinnedMemory>;

}  // namespace shoal::native::cuda
