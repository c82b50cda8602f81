#include "worker/ack_policy.h"

namespace shoal::worker {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kSucceeded: return "succeeded";
    case Outcome::kBadInput: return "bad_input";
    case Outcome::kInferenceFailed: return "inference_failed";
    case Outcome::kLoadFailed: return "load_failed";
    case Outcome::kExpired: return "expired";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kPayloadGone: return "payload_gone";
    case Outcome::kPayloadUnavailable: return "payload_unavailable";
    case Outcome::kNotServedHere: return "not_served_here";
    case Outcome::kShuttingDown: return "shutting_down";
    case Outcome::kLoraPending: return "lora_pending";
    case Outcome::kLoraLoading: return "lora_loading";
    case Outcome::kRuntimeLost: return "runtime_lost";
  }
  return "unknown";
}

std::string AckBody(AckAction action, std::chrono::milliseconds nak_delay) {
  switch (action) {
    case AckAction::kAck: return "+ACK";
    case AckAction::kTerm: return "+TERM";
    case AckAction::kInProgress: return "+WPI";
    case AckAction::kNak:
      if (nak_delay.count() <= 0) return "-NAK";
      return "-NAK {\"delay\":" +
             std::to_string(std::chrono::nanoseconds(nak_delay).count()) + "}";
  }
  return "-NAK";
}

}  // namespace shoal::worker
