// Generation through an upstream: each job one streamed /completions or
// /chat/completions call, all of them on one thread driving libcurl's multi
// interface. The upstream batches the sequences (that is its business, as
// the StreamingGenerator contract says); this relays each SSE event as an
// update and turns every way a stream can go wrong into the job's one final
// update:
//
//   the upstream refuses the request (4xx)   INVALID_INPUT, its message
//   it fails (5xx), or its key is refused    INFERENCE_ERROR, its message
//   it cannot be reached                     NO_CAPACITY (the item is tried again)
//   it sends nothing for timeout_ms          INFERENCE_ERROR
//   it sends what is not an OpenAI stream    INFERENCE_ERROR
//   it closes the stream before finishing    INFERENCE_ERROR
//   Cancel                                   finish_reason "cancelled"
//   the model is unloaded                    NO_CAPACITY
//
// The loop waits in epoll on the transfers' sockets and hands libcurl only
// the socket that is ready (its socket interface), so a token costs the
// same at 4 streams as at 256: curl_multi_perform and poll would visit
// every transfer on every wake-up.
//
// Threading: Start and Cancel from any thread; they queue and wake the loop
// (an eventfd). The loop thread owns every transfer and calls the sinks.
// The destructor ends what still runs (NO_CAPACITY) and joins.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/streaming_generator.h"
#include "runtime/upstream/upstream_http.h"

namespace shoal::upstream {

class UpstreamStreams final : public StreamingGenerator {
 public:
  UpstreamStreams(Endpoint endpoint, uint32_t max_sequences);
  ~UpstreamStreams() override;

  uint32_t max_sequences() const override { return max_sequences_; }
  uint64_t Start(GenerationJob job, Sink sink) override;
  void Cancel(uint64_t handle) override;

 private:
  struct Transfer;

  void Loop();
  void Wake();
  void Begin(std::unique_ptr<Transfer> t);                 // loop thread
  void End(uint64_t handle, Status status, std::string finish);  // loop thread
  void Finished();                                         // loop thread: transfers libcurl has done with
  void Sweep();                                            // loop thread: timeouts
  // libcurl's socket interface (loop thread): which sockets to watch, and
  // when to call it back without one.
  static int OnSocket(void* easy, int fd, int what, void* self, void* socket_data);
  static int OnTimer(void* multi, long timeout_ms, void* self);

  const Endpoint endpoint_;
  const uint32_t max_sequences_;
  void* multi_ = nullptr;  // CURLM*
  int epoll_ = -1;
  int wake_ = -1;          // eventfd: Start, Cancel and the destructor
  // When libcurl wants to be called without a socket (max: never); loop thread.
  std::chrono::steady_clock::time_point curl_deadline_ = std::chrono::steady_clock::time_point::max();

  std::mutex mu_;  // guards the queues below and stop_
  std::vector<std::unique_ptr<Transfer>> starting_;
  std::vector<uint64_t> cancelling_;
  bool stop_ = false;

  std::atomic<uint64_t> next_handle_{1};
  std::map<uint64_t, std::unique_ptr<Transfer>> running_;  // loop thread only
  std::thread thread_;
};

}  // namespace shoal::upstream
