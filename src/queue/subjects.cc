#include "queue/subjects.h"

#include <cctype>

namespace shoal::queue {
namespace {

bool IsTokenChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string ModelToken(std::string_view model_id) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(model_id.size() + 8);
  for (char c : model_id) {
    if (IsTokenChar(c)) {
      out.push_back(c);
    } else {
      const auto b = static_cast<unsigned char>(c);
      out.push_back('_');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

Result<std::string> ModelIdFromToken(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '_') {
      if (!IsTokenChar(token[i])) return InvalidInput("bad model token");
      out.push_back(token[i]);
      continue;
    }
    if (i + 2 >= token.size()) return InvalidInput("bad model token");
    const int hi = HexValue(token[i + 1]), lo = HexValue(token[i + 2]);
    if (hi < 0 || lo < 0) return InvalidInput("bad model token");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string WorkStreamName(std::string_view pool) { return "SHOAL_WORK_" + std::string(pool); }

std::string WorkSubjectFilter(std::string_view pool) {
  return "shoal.work." + std::string(pool) + ".>";
}

namespace {
constexpr std::string_view kBatchSubjectSuffix = ".batch";
constexpr std::string_view kBatchConsumerSuffix = "_batch";
}  // namespace

std::string WorkSubject(std::string_view pool, std::string_view model_id, Priority priority) {
  std::string subject = "shoal.work." + std::string(pool) + "." + ModelToken(model_id);
  if (priority == Priority::kBatch) subject += kBatchSubjectSuffix;
  return subject;
}

std::string ConsumerName(std::string_view model_id, Priority priority) {
  std::string name = ModelToken(model_id);
  if (priority == Priority::kBatch) name += kBatchConsumerSuffix;
  return name;
}

Result<std::string> ModelIdFromConsumer(std::string_view consumer) {
  if (consumer.ends_with(kBatchConsumerSuffix)) consumer.remove_suffix(kBatchConsumerSuffix.size());
  return ModelIdFromToken(consumer);
}

Result<std::string> ModelIdFromWorkSubjectTail(std::string_view tail) {
  if (tail.ends_with(kBatchSubjectSuffix)) tail.remove_suffix(kBatchSubjectSuffix.size());
  return ModelIdFromToken(tail);
}

std::string ReplySubject(std::string_view gateway_id, uint64_t request_seq) {
  return "_INBOX." + std::string(gateway_id) + "." + std::to_string(request_seq);
}

std::string ReplyWildcard(std::string_view gateway_id) {
  return "_INBOX." + std::string(gateway_id) + ".>";
}

std::string PushSubject(std::string_view worker_id, std::string_view model_id) {
  return "shoal.push." + ModelToken(worker_id) + "." + ModelToken(model_id);
}

std::string PushWildcard(std::string_view worker_id) {
  return "shoal.push." + ModelToken(worker_id) + ".>";
}

std::string HedgeSubject(std::string_view worker_id, std::string_view model_id, bool if_idle) {
  return "shoal.hedge." + ModelToken(worker_id) + "." + ModelToken(model_id) + (if_idle ? ".idle" : "");
}

Result<HedgedCopy> ParseHedgeSubject(std::string_view subject) {
  // shoal.hedge.<worker-token>.<model-token>[.idle]: tokens hold no '.'.
  constexpr std::string_view kPrefix = "shoal.hedge.";
  if (!subject.starts_with(kPrefix)) return InvalidInput("not a hedge subject: " + std::string(subject));
  std::string_view rest = subject.substr(kPrefix.size());
  const size_t worker_end = rest.find('.');
  if (worker_end == std::string_view::npos) {
    return InvalidInput("hedge subject without a model: " + std::string(subject));
  }
  rest = rest.substr(worker_end + 1);
  HedgedCopy copy;
  if (rest.ends_with(".idle")) {
    copy.if_idle = true;
    rest.remove_suffix(5);
  }
  SHOAL_ASSIGN_OR_RETURN(copy.model_id, ModelIdFromToken(rest));
  return copy;
}

std::string HedgeWildcard(std::string_view worker_id) { return "shoal.hedge." + ModelToken(worker_id) + ".>"; }

std::string CancelSubject(std::string_view pool) { return "shoal.cancel." + std::string(pool); }

}  // namespace shoal::queue
