#include "worker/ack_policy.h"

namespace shoal::worker {

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
