#include "http/errors.h"

#include "wire/json_writer.h"

namespace shoal::http {

int HttpStatus(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kInvalidInput: return 400;
    case Code::kUnauthenticated: return 401;
    case Code::kForbidden: return 403;
    case Code::kModelNotFound:
    case Code::kNotFound: return 404;
    case Code::kPayloadTooLarge: return 413;
    case Code::kRateLimited: return 429;
    case Code::kInferenceError:
    case Code::kInternal: return 500;
    case Code::kModelLoadFailed: return 502;
    case Code::kOverloaded:
    case Code::kNoCapacity: return 503;
    case Code::kDeadlineExceeded: return 504;
  }
  return 500;
}

bool WantsRetryAfter(Code code) {
  return code == Code::kOverloaded || code == Code::kNoCapacity || code == Code::kRateLimited;
}

std::string ErrorBody(const Status& status, std::string_view request_id) {
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"error\":{");
  w.Key("code");
  w.String(CodeName(status.code()));
  w.Char(',');
  w.Key("message");
  w.String(status.message());
  w.Char(',');
  w.Key("request_id");
  w.String(request_id);
  w.Raw("}}");
  return out;
}

}  // namespace shoal::http
