#include "gateway/admission.h"

#include <memory>

namespace shoal::gateway {

std::optional<Admission::Ticket> Admission::TryAdmit() {
  const size_t before = in_flight_.fetch_add(1, std::memory_order_relaxed);
  if (limit_ > 0 && before >= limit_) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return Ticket(this);
}

http::Responder Admitted(http::Responder respond, Admission::Ticket ticket) {
  // A http::Responder is copyable (std::function); the ticket is not, so the
  // copies share it.
  auto held = std::make_shared<Admission::Ticket>(std::move(ticket));
  return [respond = std::move(respond), held](http::Response response) {
    const bool last = !response.more;
    respond(std::move(response));
    if (last) held->Release();
  };
}

}  // namespace shoal::gateway
