#include "gateway/queue_gauges.h"

#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "queue/priority.h"
#include "queue/subjects.h"
#include "queue/topology.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

// JetStream's message time, "2026-12-06T06:10:01.123456789Z", as Unix ms.
Result<int64_t> ParseStreamTime(const std::string& t) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return InvalidInput("not a stream time: '" + t + "'");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (consumed < static_cast<int>(t.size()) && t[consumed] == '.') {
    int64_t scale = 100;
    for (size_t i = consumed + 1;
         i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])) && scale > 0; ++i) {
      ms += (t[i] - '0') * scale;
      scale /= 10;
    }
  }
  return ms;
}

void GaugeHeader(std::string* out, const char* name, const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
}

// A label value, escaped.
std::string Label(std::string_view v) {
  std::string out;
  AppendEscapedLabelValue(v, &out);
  return out;
}

}  // namespace

Result<int64_t> OldestMessageUnixMs(natsConnection* nc, const std::string& stream,
                                    const std::string& subject) {
  const std::string api = "$JS.API.STREAM.MSG.GET." + stream;
  const std::string body = json{{"seq", 1}, {"next_by_subj", subject}}.dump();
  natsMsg* raw = nullptr;
  SHOAL_RETURN_IF_ERROR(queue::FromNats(natsConnection_Request(&raw, nc, api.c_str(), body.data(),
                                                               static_cast<int>(body.size()), 1000),
                                        "oldest message of " + subject));
  queue::MsgPtr reply(raw);
  const json o = json::parse(
      std::string_view(natsMsg_GetData(reply.get()), natsMsg_GetDataLength(reply.get())), nullptr,
      /*allow_exceptions=*/false);
  if (o.contains("error")) return Status(Code::kNotFound, "no message on " + subject);
  if (!o.contains("message") || !o["message"].contains("time") ||
      !o["message"]["time"].is_string()) {
    return Status(Code::kInternal, "unexpected STREAM.MSG.GET reply for " + subject);
  }
  return ParseStreamTime(o["message"]["time"].get<std::string>());
}

QueueGauges::QueueGauges(QueueGaugeSources sources, std::chrono::milliseconds period)
    : sources_(std::move(sources)), period_(period) {}

QueueGauges::~QueueGauges() { Stop(); }

void QueueGauges::Start() {
  loop_.Start();
  started_ = true;
  loop_.Post([this] { Sample(); });
  loop_.Every(period_, [this] { Sample(); });
}

void QueueGauges::Stop() {
  if (!started_) return;
  loop_.Stop();
  started_ = false;
}

std::string QueueGauges::Text() const {
  std::lock_guard lock(mu_);
  return text_;
}

void QueueGauges::Sample() {
  const auto catalog = sources_.catalog();
  const int64_t now_ms = UnixMillis();
  struct Pool {
    uint64_t items = 0, busy = 0, memory_used = 0, memory_budget = 0;
    int workers = 0, executors = 0;
  };
  std::map<std::string, Pool> pools;
  for (const auto& [id, spec] : *catalog) pools[spec->pool];
  for (const auto& w : sources_.workers->Live()) {
    Pool& p = pools[w.pool];
    ++p.workers;
    p.executors += w.executors;
    p.busy += w.queued + w.in_flight;
    p.memory_used += w.memory_used;
    p.memory_budget += w.memory_budget;
  }

  std::string items, ages;
  for (auto& [pool, p] : pools) {
    auto by_model = queue::WorkMessagesByModel(sources_.js, pool);
    if (!by_model.ok()) {
      spdlog::debug("queue gauges: pool {}: {}", pool, by_model.status().ToString());
      continue;
    }
    for (const auto& [id, spec] : *catalog) {
      if (spec->pool != pool) continue;
      const auto it = by_model->find(id);
      const queue::WorkMessages n = it == by_model->end() ? queue::WorkMessages{} : it->second;
      p.items += n.total();
      const std::string labels = "pool=\"" + Label(pool) + "\",model=\"" + Label(id) + "\"";
      for (const auto& [priority, count] : {std::pair{queue::Priority::kInteractive, n.interactive},
                                            std::pair{queue::Priority::kBatch, n.batch}}) {
        items += "shoal_queue_items{" + labels + ",priority=\"" +
                 std::string(queue::PriorityName(priority)) + "\"} " + std::to_string(count) + "\n";
      }
      double age_s = 0;
      if (n.total() > 0) {  // one lookup per class with work, none for idle models
        int64_t oldest = now_ms;
        for (queue::Priority priority : {queue::Priority::kInteractive, queue::Priority::kBatch}) {
          auto t = OldestMessageUnixMs(sources_.nc, queue::WorkStreamName(pool),
                                       queue::WorkSubject(pool, id, priority));
          if (t.ok()) oldest = std::min(oldest, *t);
        }
        age_s = std::max<int64_t>(0, now_ms - oldest) / 1000.0;
      }
      ages += "shoal_queue_oldest_item_age_seconds{" + labels + "} " + std::to_string(age_s) + "\n";
    }
  }

  std::string text;
  GaugeHeader(
      &text, "shoal_queue_items",
      "A model's work in its pool's stream, waiting or being worked on (KEDA's nats-jetstream "
      "lag).");
  text += items;
  GaugeHeader(&text, "shoal_queue_oldest_item_age_seconds",
              "Since the oldest of a model's queued items was queued.");
  text += ages;
  const std::pair<const char*, const char*> pool_gauges[] = {
      {"shoal_pool_queue_items", "The pool's whole backlog in its work stream."},
      {"shoal_pool_workers", "Live workers of the pool."},
      {"shoal_pool_executors", "Batches the pool's workers may run at once."},
      {"shoal_pool_busy_items",
       "Items the pool's workers hold: queued locally or in running batches."},
      {"shoal_pool_memory_used_bytes", "Memory the pool's loaded models take."},
      {"shoal_pool_memory_budget_bytes", "Memory the pool's workers may give models."}};
  for (size_t g = 0; g < std::size(pool_gauges); ++g) {
    GaugeHeader(&text, pool_gauges[g].first, pool_gauges[g].second);
    for (const auto& [pool, p] : pools) {
      const uint64_t values[] = {p.items,
                                 static_cast<uint64_t>(p.workers),
                                 static_cast<uint64_t>(p.executors),
                                 p.busy,
                                 p.memory_used,
                                 p.memory_budget};
      text += std::string(pool_gauges[g].first) + "{pool=\"" + Label(pool) + "\"} " +
              std::to_string(values[g]) + "\n";
    }
  }
  std::lock_guard lock(mu_);
  text_ = std::move(text);
}

}  // namespace shoal::gateway
