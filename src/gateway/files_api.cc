#include "gateway/files_api.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "gateway/batch_lines.h"
#include "http/multipart.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr std::string_view kFiles = "/v1/files";
constexpr size_t kMaxListed = 10000;

json FileObject(const queue::FileRecord& f) {
  return json{{"id", f.id},
              {"object", "file"},
              {"bytes", f.bytes},
              {"created_at", f.created_at},
              {"filename", f.filename},
              {"purpose", f.purpose},
              {"status", "processed"}};  // OpenAI's (deprecated) field: a file here is whole once listed
}

// A batch input: every non-empty line a JSON object (what a job reads, line
// by line; the job checks each line's request).
Status CheckJsonl(std::string_view bytes) {
  return ForEachJsonlLine(bytes, [](uint32_t number, std::string_view text) {
    if (json::parse(text, nullptr, /*allow_exceptions=*/false).is_object()) return Status::Ok();
    return InvalidInput("file: line " + std::to_string(number) + " is not a JSON object (a batch input is JSONL)");
  });
}

}  // namespace

FilesApi::FilesApi(queue::FileStore* store) : store_(store) { loop_.Start(); }

FilesApi::~FilesApi() { loop_.Stop(); }

bool FilesApi::Handles(std::string_view path) {
  return path == kFiles || (path.starts_with(kFiles) && path[kFiles.size()] == '/');
}

void FilesApi::Handle(http::Request&& req, http::Responder respond, Caller caller) {
  loop_.Post([this, req = std::move(req), respond = std::move(respond), caller = std::move(caller)] {
    const std::string request_id = "files-" + RandomToken(8);
    respond(Serve(req, caller, request_id));
  });
}

http::Response FilesApi::Serve(const http::Request& req, const Caller& caller, const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  if (req.path == kFiles) {
    if (req.method == "POST") return Upload(req, caller, request_id);
    if (req.method == "GET") return List(req, caller, request_id);
    return fail(Status(Code::kNotFound, "no route " + req.method + " " + req.path));
  }
  std::string_view rest = std::string_view(req.path).substr(kFiles.size() + 1);
  const bool content = rest.ends_with("/content");
  if (content) rest.remove_suffix(std::string_view("/content").size());
  if (!req.query.empty()) return fail(InvalidInput("this route takes no query parameters"));
  auto file = Find(rest, caller);
  if (!file.ok()) return fail(file.status());
  if (req.method == "GET" && content) {
    auto bytes = store_->Read(*file);
    if (!bytes.ok()) return fail(bytes.status());
    http::Response r;
    r.content_type = "application/octet-stream";
    r.body = std::move(bytes).value();
    return r;
  }
  if (req.method == "GET") return http::JsonResponse(200, FileObject(*file).dump());
  if (req.method == "DELETE" && !content) {
    if (Status s = store_->Remove(file->id); !s.ok()) return fail(s);
    return http::JsonResponse(200, json{{"id", file->id}, {"object", "file"}, {"deleted", true}}.dump());
  }
  return fail(Status(Code::kNotFound, "no route " + req.method + " " + req.path));
}

http::Response FilesApi::Upload(const http::Request& req, const Caller& caller, const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  if (!req.query.empty()) return fail(InvalidInput("POST /v1/files takes no query parameters"));
  auto parts = http::ParseMultipart(req.content_type, req.body);
  if (!parts.ok()) return fail(parts.status());
  const http::FormPart* file = nullptr;
  std::string purpose;
  for (const http::FormPart& p : *parts) {
    if (p.name == "file" && !file) {
      file = &p;
    } else if (p.name == "purpose" && purpose.empty()) {
      purpose = std::string(p.data);
    } else {
      return fail(InvalidInput("unexpected form field '" + p.name + "' (expected one \"file\" and one \"purpose\")"));
    }
  }
  if (!file) return fail(InvalidInput("no \"file\" field"));
  if (purpose != "batch") {
    return fail(InvalidInput("purpose: '" + purpose + "' is not supported; Shoal keeps files for \"batch\""));
  }
  if (file->data.empty()) return fail(InvalidInput("file: empty"));
  if (Status s = CheckJsonl(file->data); !s.ok()) return fail(s);
  queue::FileRecord record;
  record.filename = file->filename.empty() ? "upload.jsonl" : file->filename;
  record.purpose = purpose;
  record.owner = caller.Owner();
  auto stored = store_->Add(std::move(record), file->data);
  if (!stored.ok()) return fail(stored.status());
  return http::JsonResponse(200, FileObject(*stored).dump());
}

http::Response FilesApi::List(const http::Request& req, const Caller& caller, const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  auto query = http::ParseQuery(req.query);
  if (!query.ok()) return fail(query.status());
  std::string purpose, after;
  size_t limit = kMaxListed;
  bool ascending = false;
  for (const auto& [name, value] : *query) {
    if (name == "purpose") {
      purpose = value;
    } else if (name == "after") {
      after = value;
    } else if (name == "order") {
      if (value != "asc" && value != "desc") return fail(InvalidInput("order: expected asc or desc"));
      ascending = value == "asc";
    } else if (name == "limit") {
      size_t n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > kMaxListed) {
        return fail(InvalidInput("limit: expected 1 to 10000"));
      }
      limit = n;
    } else {
      return fail(InvalidInput("unknown query parameter '" + name + "' (expected purpose, limit, order, after)"));
    }
  }
  auto files = store_->List();
  if (!files.ok()) return fail(files.status());
  std::vector<queue::FileRecord>& all = *files;
  if (!ascending) std::reverse(all.begin(), all.end());
  std::erase_if(all, [&](const queue::FileRecord& f) {
    return (!caller.SeesAll() && f.owner != caller.Owner()) || (!purpose.empty() && f.purpose != purpose);
  });
  size_t from = 0;
  if (!after.empty()) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& f) { return f.id == after; });
    if (it == all.end()) return fail(Status(Code::kNotFound, "after: no file '" + after + "'"));
    from = static_cast<size_t>(it - all.begin()) + 1;
  }
  json data = json::array();
  for (size_t i = from; i < all.size() && data.size() < limit; ++i) data.push_back(FileObject(all[i]));
  const bool has_more = from + data.size() < all.size();
  json out = {{"object", "list"}, {"data", data}, {"has_more", has_more}};
  if (!data.empty()) {
    out["first_id"] = data.front()["id"];
    out["last_id"] = data.back()["id"];
  }
  return http::JsonResponse(200, out.dump());
}

Result<queue::FileRecord> FilesApi::Find(std::string_view id, const Caller& caller) {
  auto file = store_->Find(id);
  if (!file.ok()) return file.status();
  if (!caller.SeesAll() && file->owner != caller.Owner()) {
    return Status(Code::kNotFound, "no file '" + std::string(id) + "'");  // as if absent: a key learns nothing
  }
  return file;
}

}  // namespace shoal::gateway
