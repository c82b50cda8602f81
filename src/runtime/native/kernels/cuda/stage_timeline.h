// StageTimeline: where a stream's time goes, stage by stage — a CUDA event
// recorded at the end of each stage, and after the stream is synchronized,
// the milliseconds between consecutive events summed by stage name. For
// profiling a forward pass without hardware counters (benchmarks only).
//
// Threading: one thread, one stream.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/native/kernels/cuda/cuda_status.h"

namespace shoal::native::cuda {

class StageTimeline {
 public:
  StageTimeline() = default;
  StageTimeline(const StageTimeline&) = delete;
  StageTimeline& operator=(const StageTimeline&) = delete;
  ~StageTimeline() {
    for (auto& [name, event] : marks_) cudaEventDestroy(event);
  }

  // The end of `stage` (the time since the previous mark is its); the first
  // mark only starts the clock.
  Status Mark(const char* stage, cudaStream_t stream) {
    cudaEvent_t e = nullptr;
    SHOAL_CUDA_OK(cudaEventCreate(&e));
    marks_.emplace_back(stage, e);
    SHOAL_CUDA_OK(cudaEventRecord(e, stream));
    return Status::Ok();
  }

  // Call after the stream has been synchronized.
  Result<std::map<std::string, double>> MillisecondsByStage() const {
    std::map<std::string, double> ms;
    for (size_t i = 1; i < marks_.size(); ++i) {
      float t = 0;
      SHOAL_CUDA_OK(cudaEventElapsedTime(&t, marks_[i - 1].second, marks_[i].second));
      ms[marks_[i].first] += t;
    }
    return ms;
  }

 private:
  std::vector<std::pair<std::string, cudaEvent_t>> marks_;
};

}  // namespace shoal::native::cuda
