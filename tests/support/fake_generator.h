// FakeGenerator: a generation worker played by a test, over real NATS, until
// the real one can run in tests. It does what a worker does on the wire
// (wire/generate.h) and nothing else:
//   - heartbeats in shoal_workers that it serves the model (so a gateway has
//     capacity for it), every 500 ms while it lives;
//   - makes the model's durable consumer and pulls work messages from it;
//   - publishes chunks (or an error) to a work message's reply subject;
//   - listens on shoal.cancel.<pool> for the gateway's cancellations.
// Failures are reported as test failures (EXPECT/ASSERT), not returned.
//
// Threading: the heartbeat runs on its own thread; the rest on the test's.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "catalog/model_spec.h"
#include "queue/nats.h"
#include "wire/work_message.h"
#include "support/test_cluster.h"
#include "wire/generate.h"

namespace shoal::testing {

class FakeGenerator {
 public:
  struct Work {
    // The work header (wire/work_message.h), copied out of the message.
    std::string request_id, reply, lora;
    Task task = Task::kEncode;
    uint32_t item = 0, cost = 0;
    int64_t deadline_unix_ms = 0;
    wire::GenerateRequest request;  // the body, decoded
    uint64_t delivered = 0;  // JetStream's delivery count (2 after a redelivery)
  };

  // Serves `spec` (its pool's stream must exist: TestCluster::Register).
  FakeGenerator(TestCluster& cluster, const ModelSpec& spec);
  ~FakeGenerator();

  // The next work message (a test failure if none comes within 5 s); acked
  // unless `ack` is false — as if the worker died: JetStream redelivers it
  // after the model's AckWait.
  Work Take(bool ack = true);

  // Publishes chunk `seq` of an attempt.
  void Send(const Work& w, uint64_t seq, const wire::GenerationChunk& c, bool final,
            int attempt = 1);
  // Publishes an error reply (`code`, a code name).
  void SendError(const Work& w, const char* code, const std::string& message);

  // The next cancellation notice for the pool ("" if none within 5 s).
  std::string NextCancel();

 private:
  void Publish(const Work& w, const std::string& reply);

  TestCluster& cluster_;
  const ModelSpec spec_;
  queue::ConnectionPtr nc_;
  queue::JsCtxPtr js_;
  queue::SubscriptionPtr work_, cancel_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace shoal::testing
