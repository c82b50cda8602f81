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

cudaError_t DeviceMemory::Allocate(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
void DeviceMemory::Free(void* p) { cudaFree(p); }
cudaError_t PinnedMemory::Allocate(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
void PinnedMemory::Free(void* p) { cudaFreeHost(p); }

template <class Memory>
CudaBuffer<Memory>::CudaBuffer(CudaBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

template <class Memory>
CudaBuffer<Memory>& CudaBuffer<Memory>::operator=(CudaBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

template <class Memory>
void CudaBuffer<Memory>::Free() {
  if (data_) Memory::Free(data_);
  data_ = nullptr;
  bytes_ = 0;
}

template <class Memory>
Status CudaBuffer<Memory>::Allocate(size_t bytes) {
  Free();
  if (bytes == 0) return Status::Ok();
  SHOAL_CUDA_OK(Memory::Allocate(&data_, bytes));
  bytes_ = bytes;
  return Status::Ok();
}

template <class Memory>
Status CudaBuffer<Memory>::Upload(const void* host, size_t bytes) {
  SHOAL_RETURN_IF_ERROR(Allocate(bytes));
  if (bytes > 0) SHOAL_CUDA_OK(cudaMemcpy(data_, host, bytes, cudaMemcpyDefault));
  return Status::Ok();
}

template class CudaBuffer<DeviceMemory>;
template class CudaBuffer<PinnedMemory>;

}  // namespace shoal::native::cuda
