#include "gateway/batches_api.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "gateway/batch_lines.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;
using queue::BatchStatus;

constexpr std::string_view kBatches = "/v1/batches";
constexpr size_t kMaxBatchesListed = 100;
constexpr size_t kMaxMetadata = 16;

Status CheckMetadata(const json& m) {
  if (m.is_null()) return Status::Ok();
  if (!m.is_object()) return InvalidInput("metadata: expected an object of strings");
  if (m.size() > kMaxMetadata) return InvalidInput("metadata: at most 16 pairs");
  for (const auto& [k, v] : m.items()) {
    if (k.size() > 64) return InvalidInput("metadata: keys are at most 64 bytes");
    if (!v.is_string() || v.get<std::string>().size() > 512) {
      return InvalidInput("metadata: '" + k + "': expected a string of at most 512 bytes");
    }
  }
  return Status::Ok();
}

}  // namespace

BatchesApi::BatchesApi(queue::BatchStore* batches, queue::FileStore* files) : batches_(batches), files_(files) {
  loop_.Start();
}

BatchesApi::~BatchesApi() { loop_.Stop(); }

bool BatchesApi::Handles(std::string_view path) {
  return path == kBatches || (path.starts_with(kBatches) && path[kBatches.size()] == '/');
}

void BatchesApi::Handle(http::Request&& req, http::Responder respond, Caller caller) {
  loop_.Post([this, req = std::move(req), respond = std::move(respond), caller = std::move(caller)] {
    respond(Serve(req, caller));
  });
}

http::Response BatchesApi::Serve(const http::Request& req, const Caller& caller) {
  const std::string request_id = "batches-" + RandomToken(8);
  auto answer = [&](const Result<queue::BatchRecord>& r) {
    return r.ok() ? http::JsonResponse(200, r->ToApiJson()) : http::ErrorResponse(r.status(), request_id);
  };
  if (req.path == kBatches) {
    if (req.method == "POST") return answer(Create(req, caller));
    if (req.method == "GET") {
      auto list = List(req, caller);
      return list.ok() ? http::JsonResponse(200, *list) : http::ErrorResponse(list.status(), request_id);
    }
  } else {
    std::string_view id = std::string_view(req.path).substr(kBatches.size() + 1);
    const bool cancel = id.ends_with("/cancel");
    if (cancel) id.remove_suffix(std::string_view("/cancel").size());
    if (!req.query.empty()) return answer(InvalidInput("this route takes no query parameters"));
    if (req.method == "POST" && cancel) return answer(Cancel(id, caller));
    if (req.method == "GET" && !cancel) {
      auto batch = Find(id, caller);
      return batch.ok() ? answer(batch->record) : answer(batch.status());
    }
  }
  return answer(Status(Code::kNotFound, "no route " + req.method + " " + req.path));
}

Result<queue::BatchRecord> BatchesApi::Create(const http::Request& req, const Caller& caller) {
  if (!req.query.empty()) return InvalidInput("POST /v1/batches takes no query parameters");
  const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return InvalidInput("the body is not a JSON object");
  for (const auto& [field, value] : body.items()) {
    if (field != "input_file_id" && field != "endpoint" && field != "completion_window" && field != "metadata") {
      return InvalidInput("unknown field '" + field + "' (expected input_file_id, endpoint, completion_window, "
                          "metadata)");
    }
  }
  for (const char* field : {"input_file_id", "endpoint", "completion_window"}) {
    if (!body.value(field, json()).is_string()) return InvalidInput(std::string(field) + ": expected a string");
  }
  queue::BatchRecord r;
  r.input_file_id = body["input_file_id"].get<std::string>();
  r.endpoint = body["endpoint"].get<std::string>();
  r.completion_window = body["completion_window"].get<std::string>();
  SHOAL_RETURN_IF_ERROR(CheckBatchEndpoint(r.endpoint));
  auto window = ParseCompletionWindow(r.completion_window);
  if (!window.ok()) return window.status();
  const json metadata = body.value("metadata", json());
  SHOAL_RETURN_IF_ERROR(CheckMetadata(metadata));
  if (metadata.is_object()) {
    for (const auto& [k, v] : metadata.items()) r.metadata[k] = v.get<std::string>();
  }

  auto file = files_->Find(r.input_file_id);
  if (!file.ok()) return file.status();
  if (!caller.SeesAll() && file->owner != caller.Owner()) {
    return Status(Code::kNotFound, "no file '" + r.input_file_id + "'");
  }
  if (file->purpose != "batch") {
    return InvalidInput("input_file_id: file " + file->id + " has purpose '" + file->purpose + "', not \"batch\"");
  }
  auto bytes = files_->Read(*file);
  if (!bytes.ok()) return bytes.status();
  auto lines = ParseBatchLines(*bytes, r.endpoint);
  if (!lines.ok()) return lines.status();

  r.total = lines->size();
  r.owner = caller.Owner();
  r.expires_at = static_cast<int64_t>(std::time(nullptr)) + *window;
  auto created = batches_->Create(std::move(r));
  if (!created.ok()) return created.status();
  return std::move(created->record);
}

Result<std::string> BatchesApi::List(const http::Request& req, const Caller& caller) {
  auto query = http::ParseQuery(req.query);
  if (!query.ok()) return query.status();
  std::string after;
  size_t limit = 20;
  for (const auto& [name, value] : *query) {
    if (name == "after") {
      after = value;
    } else if (name == "limit") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
      if (ec != std::errc() || end != value.data() + value.size() || limit < 1 || limit > kMaxBatchesListed) {
        return InvalidInput("limit: expected 1 to 100");
      }
    } else {
      return InvalidInput("unknown query parameter '" + name + "' (expected limit, after)");
    }
  }
  auto all = batches_->List();
  if (!all.ok()) return all.status();
  std::vector<queue::VersionedBatch>& jobs = *all;
  std::reverse(jobs.begin(), jobs.end());  // newest first
  std::erase_if(jobs, [&](const auto& b) { return !caller.SeesAll() && b.record.owner != caller.Owner(); });
  size_t from = 0;
  if (!after.empty()) {
    const auto it = std::find_if(jobs.begin(), jobs.end(), [&](const auto& b) { return b.record.id == after; });
    if (it == jobs.end()) return Status(Code::kNotFound, "after: no batch '" + after + "'");
    from = static_cast<size_t>(it - jobs.begin()) + 1;
  }
  json data = json::array();
  for (size_t i = from; i < jobs.size() && data.size() < limit; ++i) {
    data.push_back(json::parse(jobs[i].record.ToApiJson()));
  }
  json out = {{"object", "list"}, {"data", data}, {"has_more", from + data.size() < jobs.size()},
              {"first_id", nullptr}, {"last_id", nullptr}};
  if (!data.empty()) {
    out["first_id"] = data.front()["id"];
    out["last_id"] = data.back()["id"];
  }
  return out.dump();
}

Result<queue::BatchRecord> BatchesApi::Cancel(std::string_view id, const Caller& caller) {
  // Compare-and-set: the job's runner writes the same record.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto batch = Find(id, caller);
    if (!batch.ok()) return batch.status();
    queue::BatchRecord& r = batch->record;
    if (r.status == BatchStatus::kCancelling || r.status == BatchStatus::kCancelled) return r;
    if (r.status != BatchStatus::kValidating && r.status != BatchStatus::kInProgress) {
      return InvalidInput("batch " + r.id + " is " + std::string(queue::BatchStatusName(r.status)) +
                          ": only a validating or in-progress batch can be cancelled");
    }
    r.status = BatchStatus::kCancelling;
    r.cancelling_at = static_cast<int64_t>(std::time(nullptr));
    if (batches_->Replace(r, batch->revision).ok()) return r;
  }
  return Status(Code::kOverloaded, "batch " + std::string(id) + " changes too often to cancel now; try again");
}

Result<queue::VersionedBatch> BatchesApi::Find(std::string_view id, const Caller& caller) {
  auto batch = batches_->Find(id);
  if (!batch.ok()) return batch.status();
  if (!caller.SeesAll() && batch->record.owner != caller.Owner()) {
    return Status(Code::kNotFound, "no batch '" + std::string(id) + "'");  // as if absent
  }
  return batch;
}

}  // namespace shoal::gateway
