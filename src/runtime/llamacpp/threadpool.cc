#include "runtime/llamacpp/threadpool.h"

#include <ggml-backend.h>

namespace shoal::llamacpp {

Result<std::unique_ptr<Threadpool>> Threadpool::Create(int threads, uint32_t poll) {
  ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
  if (!cpu) return Status(Code::kModelLoadFailed, "llama.cpp has no CPU backend loaded");
  auto* make =
      reinterpret_cast<decltype(&ggml_threadpool_new)>(ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new"));
  auto* free = reinterpret_cast<FreeFn>(ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_free"));
  if (!make || !free) return Status(Code::kModelLoadFailed, "llama.cpp's CPU backend has no thread pool functions");
  ggml_threadpool_params params = ggml_threadpool_params_default(threads);
  params.poll = poll;
  ggml_threadpool* pool = make(&params);
  if (!pool) {
    return Status(Code::kModelLoadFailed,
                  "llama.cpp could not start a pool of " + std::to_string(threads) + " threads");
  }
  return std::unique_ptr<Threadpool>(new Threadpool(pool, free, threads));
}

Threadpool::~Threadpool() { free_(pool_); }

}  // namespace shoal::llamacpp
