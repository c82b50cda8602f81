// The post-processors of tokenizer.json.
// Threading: immutable after parsing.
#include "runtime/native/tokenizers/post_processor.h"

#include <algorithm>
#include <map>
#include <string>

namespace shoal::native::tok {
namespace {

void Append(Encoding& dst, const Encoding& src) {
  dst.ids.insert(dst.ids.end(), src.ids.begin(), src.ids.end());
  dst.type_ids.insert(dst.type_ids.end(), src.type_ids.begin(), src.type_ids.end());
  dst.offsets.insert(dst.offsets.end(), src.offsets.begin(), src.offsets.end());
  dst.special.insert(dst.special.end(), src.special.begin(), src.special.end());
}

void AppendSpecial(Encoding& dst, int32_t id, int32_t type_id) {
  dst.ids.push_back(id);
  dst.type_ids.push_back(type_id);
  dst.offsets.emplace_back(0, 0);
  dst.special.push_back(1);
}

void SetTypeIds(Encoding& enc, int32_t type_id) { enc.type_ids.assign(enc.ids.size(), type_id); }

class ByteLevelPost final : public PostProcessor {
 public:
  explicit ByteLevelPost(bool trim) : trim_(trim) {}
  bool trims_offsets() const override { return trim_; }

 private:
  bool trim_;
};

// [CLS] A [SEP] (B [SEP]); B and its [SEP] have type id 1.
class BertPost final : public PostProcessor {
 public:
  BertPost(int32_t cls, int32_t sep) : cls_(cls), sep_(sep) {}
  int32_t MaxSpecialId() const override { return std::max(cls_, sep_); }
  size_t AddedTokens(bool pair) const override { return pair ? 3 : 2; }
  void AddSpecialTokens(std::vector<Encoding>& encs, bool add) const override {
    if (!add) return;
    Encoding out;
    AppendSpecial(out, cls_, 0);
    Append(out, encs[0]);
    AppendSpecial(out, sep_, 0);
    if (encs.size() > 1) {
      Append(out, encs[1]);
      AppendSpecial(out, sep_, 1);
    }
    encs.assign(1, std::move(out));
  }

 private:
  int32_t cls_, sep_;
};

// <s> A </s> (</s> B </s>); every type id is 0 (RoBERTa has one segment).
class RobertaPost final : public PostProcessor {
 public:
  RobertaPost(int32_t cls, int32_t sep, bool trim) : cls_(cls), sep_(sep), trim_(trim) {}
  int32_t MaxSpecialId() const override { return std::max(cls_, sep_); }
  size_t AddedTokens(bool pair) const override { return pair ? 4 : 2; }
  bool trims_offsets() const override { return trim_; }
  void AddSpecialTokens(std::vector<Encoding>& encs, bool add) const override {
    for (Encoding& e : encs) SetTypeIds(e, 0);
    if (!add) return;
    Encoding out;
    AppendSpecial(out, cls_, 0);
    Append(out, encs[0]);
    AppendSpecial(out, sep_, 0);
    if (encs.size() > 1) {
      AppendSpecial(out, sep_, 0);
      Append(out, encs[1]);
      AppendSpecial(out, sep_, 0);
    }
    encs.assign(1, std::move(out));
  }

 private:
  int32_t cls_, sep_;
  bool trim_;
};

class TemplatePost final : public PostProcessor {
 public:
  struct Piece {
    bool is_sequence;
    int sequence;              // 0 for A, 1 for B
    std::vector<int32_t> ids;  // special token ids
    int32_t type_id;
  };

  TemplatePost(std::vector<Piece> single, std::vector<Piece> pair)
      : single_(std::move(single)), pair_(std::move(pair)) {}

  size_t AddedTokens(bool pair) const override {
    size_t n = 0;
    for (const Piece& p : pair ? pair_ : single_) {
      if (!p.is_sequence) n += p.ids.size();
    }
    return n;
  }

  int32_t MaxSpecialId() const override {
    int32_t m = -1;
    for (const auto* tmpl : {&single_, &pair_}) {
      for (const Piece& p : *tmpl) {
        for (int32_t id : p.ids) m = std::max(m, id);
      }
    }
    return m;
  }

  void AddSpecialTokens(std::vector<Encoding>& encs, bool add) const override {
    const auto& tmpl = encs.size() > 1 ? pair_ : single_;
    Encoding out;
    for (const Piece& p : tmpl) {
      if (p.is_sequence) {
        if (static_cast<size_t>(p.sequence) >= encs.size()) continue;
        Encoding e = encs[static_cast<size_t>(p.sequence)];
        SetTypeIds(e, p.type_id);
        Append(out, e);
      } else if (add) {
        for (int32_t id : p.ids) AppendSpecial(out, id, p.type_id);
      }
    }
    encs.assign(1, std::move(out));
  }

 private:
  std::vector<Piece> single_, pair_;
};

class SequencePost final : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  size_t AddedTokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->AddedTokens(pair);
    return n;
  }
  bool trims_offsets() const override {
    for (const auto& p : parts_) {
      if (p->trims_offsets()) return true;
    }
    return false;
  }
  int32_t MaxSpecialId() const override {
    int32_t m = -1;
    for (const auto& p : parts_) m = std::max(m, p->MaxSpecialId());
    return m;
  }
  void AddSpecialTokens(std::vector<Encoding>& encs, bool add) const override {
    for (const auto& p : parts_) p->AddSpecialTokens(encs, add);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// ["[CLS]", 101]
Result<int32_t> NamedId(Json json, std::string_view key, std::string_view where) {
  SHOAL_ASSIGN_OR_RETURN(Json v, ReqField(json, key, where));
  simdjson::dom::array arr;
  Json id;
  std::string_view name;
  if (v.get_array().get(arr) != simdjson::SUCCESS || arr.size() != 2 ||
      arr.at(0).get_string().get(name) != simdjson::SUCCESS ||
      arr.at(1).get(id) != simdjson::SUCCESS) {
    return LoadError(Path(where, key), "expected [\"token\", id]");
  }
  return ToId(id, Path(where, key));
}

Result<std::vector<TemplatePost::Piece>> ParseTemplate(
    Json json, std::string_view key, std::string_view where,
    const std::map<std::string, std::vector<int32_t>, std::less<>>& specials) {
  std::vector<TemplatePost::Piece> out;
  auto field = OptField(json, key);
  if (!field) return out;
  const std::string at = Path(where, key);
  simdjson::dom::array arr;
  if (field->get_array().get(arr) != simdjson::SUCCESS) {
    return LoadError(at, "expected an array (the string template form is not supported)");
  }
  size_t i = 0;
  bool seen[2] = {false, false};
  for (Json item : arr) {
    std::string here = Index(at, i++);
    TemplatePost::Piece p{};
    if (auto seq = OptField(item, "Sequence")) {
      SHOAL_ASSIGN_OR_RETURN(std::string_view id, ReqString(*seq, "id", here));
      if (id != "A" && id != "B") return LoadError(here, "sequence id must be \"A\" or \"B\"");
      p.is_sequence = true;
      p.sequence = id == "A" ? 0 : 1;
      // Lengths and truncation count each sequence once.
      if (seen[p.sequence]) return LoadError(here, "sequence \"" + std::string(id) + "\" appears twice");
      seen[p.sequence] = true;
    } else if (auto sp = OptField(item, "SpecialToken")) {
      SHOAL_ASSIGN_OR_RETURN(std::string_view id, ReqString(*sp, "id", here));
      auto it = specials.find(id);
      if (it == specials.end()) {
        return LoadError(
            here, "special token \"" + std::string(id) + "\" is not listed in special_tokens");
      }
      p.ids = it->second;
    } else {
      return LoadError(here, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    Json body = p.is_sequence ? *OptField(item, "Sequence") : *OptField(item, "SpecialToken");
    SHOAL_ASSIGN_OR_RETURN(auto type_id, OptInt(body, "type_id", here));
    p.type_id = static_cast<int32_t>(type_id.value_or(0));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

void TrimOffsets(Encoding& enc, std::string_view text) {
  for (size_t k = 0; k < enc.offsets.size(); ++k) {
    if (enc.special[k]) continue;
    auto& [start, end] = enc.offsets[k];
    if (end > text.size()) continue;
    while (start < end && text[start] == ' ') ++start;
    while (end > start && text[end - 1] == ' ') --end;
  }
}

Result<std::unique_ptr<PostProcessor>> ParsePostProcessor(Json json, std::string_view where) {
  using Ptr = std::unique_ptr<PostProcessor>;
  std::string_view type = TypeOf(json);
  if (type == "ByteLevel") {
    SHOAL_ASSIGN_OR_RETURN(bool trim, OptBool(json, "trim_offsets", true, where));
    return Ptr(new ByteLevelPost(trim));
  }
  if (type == "BertProcessing") {
    SHOAL_ASSIGN_OR_RETURN(int32_t cls, NamedId(json, "cls", where));
    SHOAL_ASSIGN_OR_RETURN(int32_t sep, NamedId(json, "sep", where));
    return Ptr(new BertPost(cls, sep));
  }
  if (type == "RobertaProcessing") {
    SHOAL_ASSIGN_OR_RETURN(int32_t cls, NamedId(json, "cls", where));
    SHOAL_ASSIGN_OR_RETURN(int32_t sep, NamedId(json, "sep", where));
    SHOAL_ASSIGN_OR_RETURN(bool trim, OptBool(json, "trim_offsets", true, where));
    return Ptr(new RobertaPost(cls, sep, trim));
  }
  if (type == "TemplateProcessing") {
    std::map<std::string, std::vector<int32_t>, std::less<>> specials;
    if (auto sp = OptField(json, "special_tokens")) {
      simdjson::dom::object obj;
      if (sp->get_object().get(obj) != simdjson::SUCCESS) {
        return LoadError(Path(where, "special_tokens"), "expected an object");
      }
      for (auto kv : obj) {
        std::string at = Path(Path(where, "special_tokens"), kv.key);
        SHOAL_ASSIGN_OR_RETURN(Json ids, ReqField(kv.value, "ids", at));
        simdjson::dom::array arr;
        if (ids.get_array().get(arr) != simdjson::SUCCESS) {
          return LoadError(Path(at, "ids"), "expected an array of ids");
        }
        std::vector<int32_t> list;
        for (Json id : arr) {
          SHOAL_ASSIGN_OR_RETURN(int32_t v, ToId(id, Path(at, "ids")));
          list.push_back(v);
        }
        specials[std::string(kv.key)] = std::move(list);
      }
    }
    SHOAL_ASSIGN_OR_RETURN(auto single, ParseTemplate(json, "single", where, specials));
    SHOAL_ASSIGN_OR_RETURN(auto pair, ParseTemplate(json, "pair", where, specials));
    if (single.empty()) single.push_back({true, 0, {}, 0});
    if (pair.empty()) {
      pair = single;
      const bool has_b = std::any_of(pair.begin(), pair.end(),
                                     [](const TemplatePost::Piece& p) { return p.is_sequence && p.sequence == 1; });
      if (!has_b) pair.push_back({true, 1, {}, 1});
    }
    return Ptr(new TemplatePost(std::move(single), std::move(pair)));
  }
  if (type == "Sequence") {
    SHOAL_ASSIGN_OR_RETURN(Json list, ReqField(json, "processors", where));
    simdjson::dom::array arr;
    if (list.get_array().get(arr) != simdjson::SUCCESS) {
      return LoadError(Path(where, "processors"), "expected an array");
    }
    std::vector<Ptr> parts;
    size_t i = 0;
    for (Json item : arr) {
      SHOAL_ASSIGN_OR_RETURN(Ptr part, ParsePostProcessor(item, Index(Path(where, "processors"), i++)));
      parts.push_back(std::move(part));
    }
    return Ptr(new SequencePost(std::move(parts)));
  }
  if (type.empty()) return LoadError(where, "missing \"type\"");
  return LoadError(where, "post-processor type \"" + std::string(type) +
                              "\" is not supported (TemplateProcessing, BertProcessing, "
                              "RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace shoal::native::tok
