// Helpers shared by the tokenizer tests: parse small JSON documents, build a
// tokenizer from hand-written tokenizer.json text, encode to ids.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/normalized_string.h"
#include "runtime/native/tokenizers/pre_tokenizers.h"
#include "runtime/native/tokenizers/tokenizer.h"

namespace shoal::native::testing {

// A JSON element that lives as long as `parser`.
inline tok::Json ParseJson(simdjson::dom::parser& parser, const std::string& text) {
  tok::Json root;
  auto err = parser.parse(text).get(root);
  EXPECT_EQ(err, simdjson::SUCCESS) << text;
  return root;
}

inline std::unique_ptr<Tokenizer> MustParse(const std::string& json) {
  auto t = Tokenizer::Parse(json);
  if (!t.ok()) {
    ADD_FAILURE() << t.status().ToString();
    return nullptr;
  }
  return std::move(t).value();
}

inline std::vector<int32_t> Ids(const Tokenizer& t, std::string_view text,
                                bool add_special_tokens = true) {
  EncodeOptions o;
  o.add_special_tokens = add_special_tokens;
  auto e = t.Encode(text, o);
  if (!e.ok()) {
    ADD_FAILURE() << e.status().ToString();
    return {};
  }
  return e->ids;
}

// The text of each piece after pre-tokenization.
inline std::vector<std::string> Pieces(const tok::PreTokenized& pt) {
  std::vector<std::string> out;
  for (tok::Range r : pt.pieces) out.emplace_back(pt.Text(r));
  return out;
}

inline tok::PreTokenized Whole(std::string_view text) {
  tok::PreTokenized pt;
  pt.arena = tok::NormalizedString(text, 0);
  pt.pieces.push_back({0, static_cast<uint32_t>(text.size())});
  return pt;
}

}  // namespace shoal::native::testing
