// FakeGenerator: a generation worker played by a test, over real NATS, until
// the real one can run in tests. It does what a worker does on the wire
// (wire/generate.h) and nothing else:
//   - heartbeats in shoal_workers that it serves the model (so a gateway has
//     capacity for it), every 500 ms while it lives;
//   - makes the model's durable consumer and pulls work messages from it;
//   - publishes chunks (or an error) to a work message's Shoal-Reply;
//   - listens on shoal.cancel.<pool> for the gateway's cancellations.
// Failures are reported as test failures (EXPECT/ASSERT), not returned.
//
// Threading: the heartbeat runs on its own thread; the rest on the test's.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

#include "catalog/model_spec.h"
#include "queue/nats.h"
#include "support/test_cluster.h"
#include "wire/generate.h"

namespace shoal::testing {

class FakeGenerator {
 public:
  struct Work {
    std::map<std::string, std::string> headers;  // the work headers of wire/work_message.h
    wire::GenerateRequest request;               // the payload, decoded
    std::string reply, request_id;
    uint64_t delivered = 0;  // JetStream's delivery count (2 after a redelivery)
  };

  // Serves `spec` (its pool's stream must exist: TestCluster::Register).
  FakeGenerator(TestCluster& cluster, const ModelSpec& spec);
  ~FakeGenerator();

  // The next work message (a test failure if none comes within 5 s); acked
  // unless `ack` is false — as if the worker died: JetStream redelivers it
  // after the model's AckWait.
  Work Take(bool ack = true);

  // Publishes chunk `seq` of an attempt (headers Shoal-Seq, Shoal-Final,
  // Shoal-Attempt).
  void Send(const Work& w, uint64_t seq, const wire::GenerationChunk& c, bool final,
            int attempt = 1);
  // Publishes an error result (Shoal-Error: `code`).
  void SendError(const Work& w, const char* code, const std::string& message);

  // The next cancellation notice for the pool ("" if none within 5 s).
  std::string NextCancel();

 private:
  template <class SetHeaders>
  void Publish(const Work& w, const std::string& payload, SetHeaders&& set);

  TestCluster& cluster_;
  const ModelSpec spec_;
  queue::ConnectionPtr nc_;
  queue::JsCtxPtr js_;
  queue::SubscriptionPtr work_, cancel_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace shoal::testing
