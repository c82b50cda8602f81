#include "common/status.h"

#include <array>

namespace shoal {
namespace {

constexpr std::array<std::string_view, 14> kNames = {
    "OK",
    "INVALID_INPUT",
    "UNAUTHENTICATED",
    "FORBIDDEN",
    "MODEL_NOT_FOUND",
    "NOT_FOUND",
    "PAYLOAD_TOO_LARGE",
    "RATE_LIMITED",
    "INFERENCE_ERROR",
    "INTERNAL",
    "MODEL_LOAD_FAILED",
    "OVERLOADED",
    "NO_CAPACITY",
    "DEADLINE_EXCEEDED",
};

}  // namespace

std::string_view CodeName(Code code) { return kNames[static_cast<size_t>(code)]; }

Code CodeFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Code>(i);
  }
  return Code::kInternal;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace shoal
