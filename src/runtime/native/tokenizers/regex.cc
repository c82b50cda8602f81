// PCRE2 wrapper for the tokenizer's patterns.
// Threading: compiled code is shared read-only; match data, match context and
// JIT stack are per thread (thread_local), created on first use.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/native/tokenizers/regex.h"

#include <pcre2.h>

namespace shoal::native::tok {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof(buf));
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// Per-thread matching state. The JIT stack is larger than PCRE2's 32 KiB
// default because patterns like `\s+(?!\S)` backtrack over long whitespace runs.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  ThreadMatchState() {
    data = pcre2_match_data_create(16, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
    if (context) pcre2_match_context_free(context);
    if (data) pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

Result<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    return Status(Code::kModelLoadFailed, "regex /" + std::string(pattern) + "/ at offset " +
                                              std::to_string(offset) + ": " + Pcre2Message(error));
  }
  // JIT is an optimization: without it (no JIT on this CPU) pcre2_match
  // interprets the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::unique_ptr<Regex> re(new Regex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  return re;
}

// A Replace/Split "pattern": {"String": "..."} or {"Regex": "..."}.
Result<std::unique_ptr<Regex>> ParsePattern(Json json, std::string_view where,
                                            std::string* literal) {
  SHOAL_ASSIGN_OR_RETURN(auto str, OptString(json, "String", where));
  if (str) {
    *literal = std::string(*str);
    return std::unique_ptr<Regex>();
  }
  SHOAL_ASSIGN_OR_RETURN(auto re, OptString(json, "Regex", where));
  if (re) return Regex::Compile(*re);
  return LoadError(where, "expected {\"String\": ...} or {\"Regex\": ...}");
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Status Regex::FindAll(std::string_view text, std::vector<Range>& out) const {
  ThreadMatchState& st = MatchState();
  if (st.data == nullptr) return Internal("regex: cannot allocate match data");
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at <= text.size()) {
    // The text was validated as UTF-8 on entry; skip PCRE2's own check.
    int rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return Status(Code::kInvalidInput,
                    "tokenizer regex /" + pattern_ + "/ failed: " + Pcre2Message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    size_t s = ov[0], e = ov[1];
    out.push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
    if (e > s) {
      at = e;
    } else {
      if (s >= text.size()) break;
      at = s + static_cast<size_t>(Utf8Length(static_cast<unsigned char>(text[s])));
    }
  }
  return Status::Ok();
}

}  // namespace shoal::native::tok
