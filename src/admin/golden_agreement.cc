#include "admin/golden_agreement.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/cosine.h"

namespace shoal::admin {
namespace {

using nlohmann::json;

Result<std::vector<float>> Floats(const json& base64) {
  std::string bytes;
  if (!base64.is_string() || !DecodeBase64(base64.get<std::string>(), &bytes) ||
      bytes.size() % sizeof(float) != 0) {
    return InvalidInput("golden outputs: a vector is not base64 float32");
  }
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// The index of the probe most like probe i (by cosine), among the others.
size_t Nearest(const std::vector<std::vector<float>>& v, size_t i) {
  size_t best = i == 0 ? 1 : 0;
  for (size_t j = 0; j < v.size(); ++j) {
    if (j != i && Cosine(v[i], v[j]) > Cosine(v[i], v[best])) best = j;
  }
  return best;
}

Status CompareEncode(const json& a, const json& b, GoldenAgreement* g) {
  std::vector<std::vector<float>> va, vb;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].contains("dense") || !b[i].contains("dense"))
      return InvalidInput("golden outputs: no dense vectors");
    SHOAL_ASSIGN_OR_RETURN(std::vector<float> x, Floats(a[i]["dense"]));
    SHOAL_ASSIGN_OR_RETURN(std::vector<float> y, Floats(b[i]["dense"]));
    if (x.size() != y.size() || x.empty())
      return InvalidInput("golden outputs: vectors of other dimensions");
    va.push_back(std::move(x));
    vb.push_back(std::move(y));
  }
  double sum = 0;
  g->min_cosine = 1;
  for (size_t i = 0; i < va.size(); ++i) {
    const double c = Cosine(va[i], vb[i]);
    sum += c;
    g->min_cosine = std::min(g->min_cosine, c);
  }
  g->mean_cosine = sum / static_cast<double>(va.size());
  size_t same = 0;
  for (size_t i = 0; va.size() > 1 && i < va.size(); ++i) same += Nearest(va, i) == Nearest(vb, i);
  g->agreement = va.size() > 1 ? static_cast<double>(same) / static_cast<double>(va.size()) : 1;
  return Status::Ok();
}

Status CompareScore(const json& a, const json& b, GoldenAgreement* g) {
  std::vector<double> x, y;
  for (size_t i = 0; i < a.size(); ++i) {
    const json &la = a[i].value("logits", json::array()), &lb = b[i].value("logits", json::array());
    if (la.empty() || la.size() != lb.size())
      return InvalidInput("golden outputs: logits differ in number");
    x.push_back(la[0].get<double>());
    y.push_back(lb[0].get<double>());
    for (size_t k = 0; k < la.size(); ++k) {
      g->max_abs_diff =
          std::max(g->max_abs_diff, std::fabs(la[k].get<double>() - lb[k].get<double>()));
    }
  }
  const auto [kept, orderings] = KeptOrderings(x, y);
  g->agreement = orderings ? static_cast<double>(kept) / static_cast<double>(orderings) : 1;
  return Status::Ok();
}

}  // namespace

std::pair<size_t, size_t> KeptOrderings(std::span<const double> a, std::span<const double> b) {
  size_t kept = 0, orderings = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    for (size_t j = i + 1; j < a.size() && j < b.size(); ++j, ++orderings) {
      kept += (a[i] < a[j]) == (b[i] < b[j]);
    }
  }
  return {kept, orderings};
}

json ComparedAnswer(const json& o) {
  if (o.contains("labels")) return o["labels"].empty() ? json() : o["labels"][0]["label"];
  if (o.contains("entities")) {
    json spans = json::array();
    for (const json& e : o["entities"]) spans.push_back({e["label"], e["start"], e["end"]});
    return spans;
  }
  if (o.contains("lines")) {
    json texts = json::array();
    for (const json& l : o["lines"]) texts.push_back(l["text"]);
    return texts;
  }
  return o.value("text", json());
}

std::string GoldenAgreement::ToJson(std::string_view task) const {
  json o = {{"probes", probes}, {"agreement", agreement}};
  if (task == "encode") {
    o["mean_cosine"] = mean_cosine;
    o["min_cosine"] = min_cosine;
  }
  if (task == "score") o["max_abs_diff"] = max_abs_diff;
  return o.dump();
}

Result<GoldenAgreement> CompareGolden(std::string_view a_json, std::string_view b_json) {
  const json a = json::parse(a_json, nullptr, false), b = json::parse(b_json, nullptr, false);
  if (!a.is_object() || !b.is_object()) return InvalidInput("golden outputs: none recorded");
  if (a.value("probe_set", "") != b.value("probe_set", "") ||
      a.value("task", "") != b.value("task", "")) {
    return InvalidInput("golden outputs: of other probe sets or tasks");
  }
  const json &oa = a["outputs"], &ob = b["outputs"];
  if (!oa.is_array() || oa.size() != ob.size() || oa.empty())
    return InvalidInput("golden outputs: other probes");
  GoldenAgreement g;
  g.probes = oa.size();
  const std::string task = a.value("task", "");
  if (task == "encode") {
    SHOAL_RETURN_IF_ERROR(CompareEncode(oa, ob, &g));
  } else if (task == "score") {
    SHOAL_RETURN_IF_ERROR(CompareScore(oa, ob, &g));
  } else {
    size_t same = 0;
    for (size_t i = 0; i < oa.size(); ++i) same += ComparedAnswer(oa[i]) == ComparedAnswer(ob[i]);
    g.agreement = static_cast<double>(same) / static_cast<double>(oa.size());
  }
  return g;
}

}  // namespace shoal::admin
