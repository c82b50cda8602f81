#include "baselines/push_intake.h"

#include "common/log.h"
#include "queue/subjects.h"

namespace shoal::baselines {

Result<std::unique_ptr<PushIntake>> PushIntake::Attach(worker::Worker* worker) {
  std::unique_ptr<PushIntake> p(new PushIntake());
  worker::Intake& intake = worker->intake();
  SHOAL_RETURN_IF_ERROR(intake.Subscribe(
      queue::PushWildcard(worker->id()), [&intake, items = p->items_](queue::Message msg) {
        // shoal.push.<worker-token>.<model-token>: the model is the last token.
        const std::string_view subject = msg.subject();
        auto model_id = queue::ModelIdFromToken(subject.substr(subject.rfind('.') + 1));
        if (!model_id.ok()) {
          spdlog::warn("worker: pushed message on {} names no model; dropped", subject);
          return;
        }
        if (intake.Accept(*model_id, std::move(msg))) items->fetch_add(1, std::memory_order_relaxed);
      }));
  return p;
}

}  // namespace shoal::baselines
