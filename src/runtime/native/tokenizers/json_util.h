// Reading tokenizer.json fields from a simdjson DOM, with errors as values.
//
// Every failure is a kModelLoadFailed Status whose message names the JSON path
// ("pre_tokenizer.pretokenizers[1].behavior: expected a string"), so a broken
// or unsupported file says where it is wrong. Only the error-code API of
// simdjson is used here; the loader still catches at its boundary.
//
// Threading: pure functions over a DOM that the caller keeps alive.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::native::tok {

using Json = simdjson::dom::element;

inline Status LoadError(std::string_view where, std::string_view what) {
  return Status(Code::kModelLoadFailed,
                "tokenizer.json: " + std::string(where) + ": " + std::string(what));
}

inline std::string Path(std::string_view where, std::string_view key) {
  return where.empty() ? std::string(key) : std::string(where) + "." + std::string(key);
}

// The field, or nullopt when missing or null.
inline std::optional<Json> OptField(Json obj, std::string_view key) {
  Json v;
  if (obj.type() != simdjson::dom::element_type::OBJECT) return std::nullopt;
  if (obj[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  if (v.is_null()) return std::nullopt;
  return v;
}

inline Result<Json> ReqField(Json obj, std::string_view key, std::string_view where) {
  auto v = OptField(obj, key);
  if (!v) return LoadError(Path(where, key), "missing");
  return *v;
}

inline Result<std::optional<std::string_view>> OptString(Json obj, std::string_view key,
                                                         std::string_view where) {
  auto v = OptField(obj, key);
  if (!v) return std::optional<std::string_view>();
  std::string_view s;
  if (v->get_string().get(s) != simdjson::SUCCESS) {
    return LoadError(Path(where, key), "expected a string");
  }
  return std::optional<std::string_view>(s);
}

inline Result<std::string_view> ReqString(Json obj, std::string_view key, std::string_view where) {
  auto s = OptString(obj, key, where);
  if (!s.ok()) return s.status();
  if (!s.value()) return LoadError(Path(where, key), "missing");
  return *s.value();
}

inline Result<bool> OptBool(Json obj, std::string_view key, bool dflt, std::string_view where) {
  auto v = OptField(obj, key);
  if (!v) return dflt;
  bool b;
  if (v->get_bool().get(b) != simdjson::SUCCESS) {
    return LoadError(Path(where, key), "expected true or false");
  }
  return b;
}

inline Result<std::optional<int64_t>> OptInt(Json obj, std::string_view key,
                                             std::string_view where) {
  auto v = OptField(obj, key);
  if (!v) return std::optional<int64_t>();
  int64_t n;
  if (v->get_int64().get(n) == simdjson::SUCCESS) return std::optional<int64_t>(n);
  uint64_t u;
  if (v->get_uint64().get(u) == simdjson::SUCCESS && u <= INT64_MAX) {
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  return LoadError(Path(where, key), "expected an integer");
}

// A token id from JSON: a non-negative integer below kMaxTokenIds. Ids index
// dense tables (the vocabulary by id, OutputBytes, the embedding rows), so one
// stray large id would size them all; real vocabularies have under 300k ids.
inline constexpr int64_t kMaxTokenIds = int64_t{1} << 22;

inline Result<int32_t> ToId(Json v, std::string_view where) {
  int64_t n;
  if (v.get_int64().get(n) != simdjson::SUCCESS || n < 0) {
    return LoadError(where, "expected a token id (a non-negative integer)");
  }
  if (n >= kMaxTokenIds) {
    return LoadError(where, "token id " + std::to_string(n) + " is past the largest supported (" +
                                std::to_string(kMaxTokenIds - 1) + ")");
  }
  return static_cast<int32_t>(n);
}

inline Result<double> ToDouble(Json v, std::string_view where) {
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t n;
  if (v.get_int64().get(n) == simdjson::SUCCESS) return static_cast<double>(n);
  return LoadError(where, "expected a number");
}

// The component's "type" string ("" when absent).
inline std::string_view TypeOf(Json obj) {
  auto v = OptField(obj, "type");
  std::string_view s;
  if (!v || v->get_string().get(s) != simdjson::SUCCESS) return {};
  return s;
}

inline std::string Index(std::string_view where, size_t i) {
  return std::string(where) + "[" + std::to_string(i) + "]";
}

}  // namespace shoal::native::tok


