// A ggml thread pool that lives as long as the llama.cpp context it is
// attached to. Without one, llama.cpp's CPU backend makes `threads − 1`
// threads for every graph it computes — every llama_decode, so every
// generated token — and joins them after (ggml_graph_compute's "disposable
// threadpool"); llama-server attaches one of its own for that reason.
//
// `poll` is ggml's polling level between graphs (0: the threads sleep on a
// condition until the next graph; up to 100: they spin for it first, which
// takes the cores from whatever else runs on them — on a small machine, the
// serving plane that carries the tokens: docs/benchmarks.md "llama.cpp").
// Inside a graph the threads meet at each operation either way.
//
// The CPU backend is a library loaded at run time (one per ISA), so its
// pool functions are found through the backend registry; call
// ggml_backend_load_all_from_path first.
//
// Threading: create and free from any thread; attach to one context.
#pragma once

#include <ggml-cpu.h>
#include <llama.h>

#include <memory>

#include "common/status.h"

namespace shoal::llamacpp {

class Threadpool {
 public:
  static Result<std::unique_ptr<Threadpool>> Create(int threads, uint32_t poll);
  ~Threadpool();  // detach it from every context first (llama_free does)

  ggml_threadpool* get() const { return pool_; }
  int threads() const { return threads_; }

 private:
  using FreeFn = void (*)(ggml_threadpool*);
  Threadpool(ggml_threadpool* pool, FreeFn free, int threads) : pool_(pool), free_(free), threads_(threads) {}

  ggml_threadpool* pool_;
  FreeFn free_;
  int threads_;
};

}  // namespace shoal::llamacpp
