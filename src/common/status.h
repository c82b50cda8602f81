// Status and Result<T>: errors as values across module boundaries.
//
// A Status is a code plus a message. The codes are the API error codes of
// docs/api.md (each maps to one HTTP status in http/errors.h) plus kInternal for
// failures that are nobody's input (I/O, a broken dependency). No exception
// crosses a module boundary; code that calls a throwing library catches at the
// call site and returns a Status.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shoal {

enum class Code : unsigned char {
  kOk = 0,
  kInvalidInput,      // 400 INVALID_INPUT
  kUnauthenticated,   // 401 UNAUTHENTICATED
  kForbidden,         // 403 FORBIDDEN
  kModelNotFound,     // 404 MODEL_NOT_FOUND
  kNotFound,          // 404 NOT_FOUND (a route or a non-model resource)
  kPayloadTooLarge,   // 413 PAYLOAD_TOO_LARGE
  kRateLimited,       // 429 RATE_LIMITED
  kInferenceError,    // 500 INFERENCE_ERROR
  kInternal,          // 500 INTERNAL
  kModelLoadFailed,   // 502 MODEL_LOAD_FAILED
  kOverloaded,        // 503 OVERLOADED
  kNoCapacity,        // 503 NO_CAPACITY
  kDeadlineExceeded,  // 504 DEADLINE_EXCEEDED
};

// The wire name of a code ("INVALID_INPUT"), and back. Unknown names parse to
// kInternal so a newer peer's code still reads as an error.
std::string_view CodeName(Code code);
Code CodeFromName(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_INPUT: items[2].text: expected a string"
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidInput(std::string m) { return Status(Code::kInvalidInput, std::move(m)); }
inline Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }

// A value or the Status that explains its absence.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "a Result without a value needs an error status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace shoal

// Returns early with the status of an expression that failed.
// `SHOAL_ASSIGN_OR_RETURN(auto x, ResultExpr())` or `(existing, ...)`: the
// value of a Result, or return its error from the calling function.
#define SHOAL_ASSIGN_OR_RETURN(lhs, expr) \
  SHOAL_ASSIGN_OR_RETURN_IMPL(lhs, expr, SHOAL_STATUS_CONCAT(shoal_result_, __LINE__))
#define SHOAL_ASSIGN_OR_RETURN_IMPL(lhs, expr, tmp) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
#define SHOAL_STATUS_CONCAT(a, b) SHOAL_STATUS_CONCAT_INNER(a, b)
#define SHOAL_STATUS_CONCAT_INNER(a, b) a##b

#define SHOAL_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::shoal::Status shoal_status_ = (expr);    \
    if (!shoal_status_.ok()) return shoal_status_; \
  } while (0)
