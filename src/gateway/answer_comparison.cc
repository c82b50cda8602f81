#include "gateway/answer_comparison.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "admin/golden_agreement.h"
#include "common/cosine.h"
#include "wire/transcode.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

Result<json> Decode(std::string_view msgpack) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(wire::MsgpackToJson(msgpack, &text));
  json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return Status(Code::kInternal, "a worker's result is not a map");
  return o;
}

std::vector<float> Floats(const json& a) {
  std::vector<float> v;
  if (!a.is_array()) return v;
  v.reserve(a.size());
  for (const json& x : a) v.push_back(x.is_number() ? x.get<float>() : 0.0f);
  return v;
}

// A sparse output as one vector over the indices of both.
std::pair<std::vector<float>, std::vector<float>> OnUnion(const json& a, const json& b) {
  std::map<uint64_t, std::pair<float, float>> weights;
  for (const auto& [side, s] : {std::pair{0, &a}, std::pair{1, &b}}) {
    const json& indices = s->value("indices", json::array());
    const std::vector<float> values = Floats(s->value("values", json::array()));
    for (size_t i = 0; i < indices.size() && i < values.size(); ++i) {
      auto& w = weights[indices[i].is_number_unsigned() ? indices[i].get<uint64_t>() : 0];
      (side == 0 ? w.first : w.second) = values[i];
    }
  }
  std::pair<std::vector<float>, std::vector<float>> out;
  for (const auto& [index, w] : weights) {
    out.first.push_back(w.first);
    out.second.push_back(w.second);
  }
  return out;
}

std::vector<float> Flattened(const json& rows) {
  std::vector<float> v;
  if (!rows.is_array()) return v;
  for (const json& row : rows) {
    const std::vector<float> r = Floats(row);
    v.insert(v.end(), r.begin(), r.end());
  }
  return v;
}

void AddCosine(double c, AnswerComparison* out) {
  ++out->vectors;
  out->cosine_sum += c;
  out->min_cosine = std::min(out->min_cosine, c);
}

void CompareEncoded(const json& a, const json& b, AnswerComparison* out) {
  for (const char* kind : {"dense", "sparse", "multivector"}) {
    const bool in_a = a.contains(kind), in_b = b.contains(kind);
    if (!in_a && !in_b) continue;
    if (!in_a || !in_b) {
      AddCosine(0, out);
    } else if (std::string_view(kind) == "sparse") {
      const auto [x, y] = OnUnion(a[kind], b[kind]);
      AddCosine(Cosine(x, y), out);
    } else if (std::string_view(kind) == "dense") {
      AddCosine(Cosine(Floats(a[kind]), Floats(b[kind])), out);
    } else {
      AddCosine(Cosine(Flattened(a[kind]), Flattened(b[kind])), out);
    }
  }
}

double FirstLogit(const json& o) {
  const json& logits = o.value("logits", json::array());
  return !logits.empty() && logits[0].is_number() ? logits[0].get<double>() : 0;
}

}  // namespace

void AnswerComparison::Add(const AnswerComparison& other) {
  vectors += other.vectors;
  cosine_sum += other.cosine_sum;
  min_cosine = std::min(min_cosine, other.min_cosine);
  judged += other.judged;
  agreed += other.agreed;
}

Result<AnswerComparison> CompareAnswers(Task task, const std::vector<std::string_view>& serving,
                                        const std::vector<std::string_view>& candidate) {
  if (task != Task::kEncode && task != Task::kScore && task != Task::kExtract) {
    return InvalidInput(std::string(TaskName(task)) + " answers are not compared");
  }
  if (serving.size() != candidate.size()) {
    return InvalidInput("the answers have " + std::to_string(serving.size()) + " and " +
                        std::to_string(candidate.size()) + " items");
  }
  AnswerComparison out;
  std::vector<double> serving_logits, candidate_logits;
  for (size_t i = 0; i < serving.size(); ++i) {
    SHOAL_ASSIGN_OR_RETURN(json a, Decode(serving[i]));
    SHOAL_ASSIGN_OR_RETURN(json b, Decode(candidate[i]));
    if (task == Task::kEncode) {
      CompareEncoded(a, b, &out);
    } else if (task == Task::kScore) {
      serving_logits.push_back(FirstLogit(a));
      candidate_logits.push_back(FirstLogit(b));
    } else {
      ++out.judged;
      out.agreed += admin::ComparedAnswer(a) == admin::ComparedAnswer(b);
    }
  }
  if (task == Task::kScore) {
    const auto [kept, pairs] = admin::KeptOrderings(serving_logits, candidate_logits);
    out.judged = pairs;
    out.agreed = kept;
  }
  return out;
}

}  // namespace shoal::gateway
