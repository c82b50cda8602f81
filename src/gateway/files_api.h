// FilesApi: OpenAI's Files API, for the inputs of batch jobs (and, later,
// their output and error files), over the FileStore (queue/file_store.h):
//
//   POST   /v1/files                multipart/form-data: "purpose" ("batch")
//                                   and "file" (JSONL: every non-empty line
//                                   a JSON object) → 200 the file object
//   GET    /v1/files                ?purpose= &limit= (1..10000, 10000)
//                                   &order=asc|desc (desc) &after=<id>
//                                   → {"object": "list", "data", "has_more"}
//   GET    /v1/files/{id}           the file object (404 NOT_FOUND)
//   GET    /v1/files/{id}/content   its bytes
//   DELETE /v1/files/{id}           {"id", "object": "file", "deleted": true}
//
// A file object: {"id", "object": "file", "bytes", "created_at",
// "filename", "purpose", "status": "processed"}. With API keys a file belongs to the key that
// uploaded it: other keys neither list nor read it (404), admin keys and
// the admin token see every file.
//
// Threading: Handle from any thread; requests are served one at a time on
// the API's own thread (FileStore calls block on JetStream), never on a
// lane's loop.
#pragma once

#include <string_view>

#include "common/event_loop.h"
#include "gateway/auth.h"
#include "http/http.h"
#include "queue/file_store.h"

namespace shoal::gateway {

class FilesApi {
 public:
  explicit FilesApi(queue::FileStore* store);  // not owned; it outlives this
  ~FilesApi();

  static bool Handles(std::string_view path);
  // For an authenticated caller; `respond` is called from the API's thread.
  void Handle(http::Request&& req, http::Responder respond, Caller caller);

 private:
  http::Response Serve(const http::Request& req, const Caller& caller, const std::string& request_id);
  http::Response Upload(const http::Request& req, const Caller& caller, const std::string& request_id);
  http::Response List(const http::Request& req, const Caller& caller, const std::string& request_id);
  // The file `id` if `caller` may see it, else NOT_FOUND.
  Result<queue::FileRecord> Find(std::string_view id, const Caller& caller);

  queue::FileStore* const store_;
  EventLoop loop_;
};

}  // namespace shoal::gateway
