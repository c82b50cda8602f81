#include "worker/generation_reply.h"

#include "common/log.h"
#include "wire/work_message.h"

namespace shoal::worker {

void PublishChunk(natsConnection* nc, const std::string& worker_id, const ServedModel& model, const WorkItem& item,
                  uint32_t seq, bool final, const wire::GenerationChunk& c, std::string* scratch) {
  const uint32_t generated = c.completion_tokens;
  if (final && model.metrics) {
    const ModelSeries* m = model.metrics;
    m->queue_seconds->Observe(c.queue_ms / 1e3);
    m->generated_tokens->Inc(static_cast<double>(generated));
    if (generated > 0) m->ttft_seconds->Observe(c.ttft_ms / 1e3);
    if (generated > 1) m->itl_seconds->Observe(c.itl_ms / 1e3);
    if (!item.work.lora.empty()) m->loras->Record(item.work.lora, c.prompt_tokens + generated);
  }
  wire::ReplyHeader h;
  h.item = item.work.item;  // which output (n > 1)
  h.worker = worker_id;
  h.attempt = static_cast<uint32_t>(item.delivered);
  h.seq = seq;
  if (final) {
    h.final = true;
    h.tokens = generated;
    h.cold_start = item.enqueued_us < model.loaded_unix_us;
  }
  scratch->clear();
  wire::AppendReplyHeader(h, scratch);
  wire::AppendChunk(c, scratch);
  if (Status st = queue::Publish(nc, std::string(item.work.reply), *scratch); !st.ok()) {
    spdlog::warn("rid={} chunk not published: {}", item.work.request_id, st.message());
  }
}

}  // namespace shoal::worker
