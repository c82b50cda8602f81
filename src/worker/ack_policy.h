// What a worker tells the client and JetStream about a work message, by
// failure class — the policy of docs/architecture.md ("Ack policy") in one table:
//
//   outcome            reply to the client         JetStream
//   succeeded          the result                  +ACK
//   bad input          INVALID_INPUT error         +TERM  (redelivery cannot help)
//   inference failed   INFERENCE_ERROR error       +TERM
//   model load failed  MODEL_LOAD_FAILED error     +TERM  (terminal for the
//                                                  spec: registering it again
//                                                  retries the load)
//   expired            nothing (the gateway has    +ACK   (drop: nobody waits)
//                      already answered 504)
//   payload gone       nothing (its request ended: +ACK   (drop)
//                      the gateway deleted it)
//   payload store      nothing                     -NAK after 1 s (the store
//   unreachable                                           may come back within
//                                                         the deadline)
//   not served here    nothing                     -NAK after 100 ms (another
//                      (model left this worker)           worker takes it)
//   shutting down      nothing                     -NAK now (redeliver at once)
//   LoRA not known     nothing                     -NAK after 250 ms (the
//   here yet                                              catalog change that
//                                                         added it is on its
//                                                         way; twice at most,
//                                                         then MODEL_NOT_FOUND
//                                                         + TERM as bad input)
//   LoRA loading       nothing                     -NAK after 20 ms (its files
//                                                         are read in the
//                                                         background meanwhile;
//                                                         the last delivery
//                                                         runs and waits for it)
//   runtime process    nothing                     -NAK after 500 ms (its
//   lost                                                  supervisor starts a
//                                                         new one; the item
//                                                         runs again, here or
//                                                         elsewhere)
//   worker crash       —                           nothing: JetStream redelivers
//                                                  after AckWait
//
// Results are published before the ack, so a crash between the two leads to
// a redelivery whose duplicate result the gateway ignores, never to a lost one.
// Messages waiting or running longer than half their AckWait get +WPI
// (in progress) so JetStream does not hand them to another worker meanwhile.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace shoal::worker {

enum class Outcome {
  kSucceeded,
  kBadInput,
  kInferenceFailed,
  kLoadFailed,
  kExpired,
  kCancelled,  // the client hung up before it started
  kPayloadGone,
  kPayloadUnavailable,
  kNotServedHere,
  kShuttingDown,
  kLoraPending,  // names an adapter the loaded model does not have (yet)
  kLoraLoading,  // names an adapter the model is reading from disk now
  kRuntimeLost,  // the runtime process running its batch died or was killed
};

enum class AckAction { kAck, kTerm, kNak, kInProgress };

struct Disposition {
  bool reply;  // publish a result or an error to the client
  AckAction action;
  std::chrono::milliseconds nak_delay{0};
};

constexpr Disposition DispositionFor(Outcome o) {
  switch (o) {
    case Outcome::kSucceeded: return {true, AckAction::kAck};
    case Outcome::kBadInput: return {true, AckAction::kTerm};
    case Outcome::kInferenceFailed: return {true, AckAction::kTerm};
    case Outcome::kLoadFailed: return {true, AckAction::kTerm};
    case Outcome::kExpired: return {false, AckAction::kAck};
    case Outcome::kCancelled: return {false, AckAction::kAck};
    case Outcome::kPayloadGone: return {false, AckAction::kAck};
    case Outcome::kPayloadUnavailable: return {false, AckAction::kNak, std::chrono::milliseconds(1000)};
    case Outcome::kNotServedHere: return {false, AckAction::kNak, std::chrono::milliseconds(100)};
    case Outcome::kShuttingDown: return {false, AckAction::kNak};
    case Outcome::kLoraPending: return {false, AckAction::kNak, std::chrono::milliseconds(250)};
    case Outcome::kLoraLoading: return {false, AckAction::kNak, std::chrono::milliseconds(20)};
    case Outcome::kRuntimeLost: return {false, AckAction::kNak, std::chrono::milliseconds(500)};
  }
  return {false, AckAction::kNak};
}

// The outcome's name in metrics and logs ("succeeded", "bad_input", …).
std::string_view OutcomeName(Outcome o);

// The body JetStream expects on the ack subject for `action`.
std::string AckBody(AckAction action, std::chrono::milliseconds nak_delay);

}  // namespace shoal::worker
