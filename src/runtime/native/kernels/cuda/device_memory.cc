#include "runtime/native/kernels/cuda/device_memory.h"

#include <utility>

#include "runtime/native/kernels/cuda/cuda_status.h"

namespace shoal::native::cuda {

int DeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

Result<DeviceInfo> DescribeDevice(int device) {
  cudaDeviceProp p{};
  SHOAL_CUDA_OK(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.name = p.name;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  d.multiprocessors = p.multiProcessorCount;
  SHOAL_CUDA_OK(cudaSetDevice(device));
  SHOAL_CUDA_OK(cudaMemGetInfo(&d.free_bytes, &d.total_bytes));
  return d;
}

DeviceBuffer::~DeviceBuffer() { Free(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Free() {
  if (data_) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

Status DeviceBuffer::Allocate(size_t bytes) {
  Free();
  if (bytes == 0) return Status::Ok();
  SHOAL_CUDA_OK(cudaMalloc(&data_, bytes));
  bytes_ = bytes;
  return Status::Ok();
}

Status DeviceBuffer::Upload(const void* host, size_t bytes) {
  SHOAL_RETURN_IF_ERROR(Allocate(bytes));
  if (bytes > 0) SHOAL_CUDA_OK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}

PinnedBuffer::~PinnedBuffer() { Free(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::Free() {
  if (data_) cudaFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
}

Status PinnedBuffer::Allocate(size_t bytes) {
  Free();
  if (bytes == 0) return Status::Ok();
  SHOAL_CUDA_OK(cudaMallocHost(&data_, bytes));
  bytes_ = bytes;
  return Status::Ok();
}

}  // namespace shoal::native::cuda
