// The JSON request decoders. The first byte picks the parser, the rest is
// the body: encode (native JSON), OpenAI embeddings, score, rerank, tokenize
// (wire/encode_request.h, score_request.h), OpenAI chat completions and
// completions, native generate (generate_request.h). The queue's side of
// generation (MessagePack) is body_peek_fuzz's.
// What must hold: items stay within the limits and decode; a parsed
// generation request survives AppendGenerateWork → DecodeGenerateWork
// unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "wire/encode_request.h"
#include "wire/generate.h"
#include "wire/generate_request.h"
#include "wire/extract_request.h"
#include "wire/score_request.h"
#include "wire/item.h"

namespace {

using namespace shoal::wire;

constexpr int kParsers = 9;

void CheckItems(const WorkRequest& req, const ParseLimits& limits) {
  FUZZ_CHECK(req.items.size() <= limits.max_items);
  for (const RequestItem& item : req.items) {
    ItemFields f;
    FUZZ_CHECK(DecodeItem(item.payload, req.task, &f).ok());
    FUZZ_CHECK(f.text.size() <= limits.max_item_bytes);
  }
}

bool SameMessages(const GenerateRequest& a, const GenerateRequest& b) {
  if (a.messages.size() != b.messages.size()) return false;
  for (size_t i = 0; i < a.messages.size(); ++i) {
    if (a.messages[i].role != b.messages[i].role || a.messages[i].content != b.messages[i].content) return false;
    if (a.messages[i].parts.size() != b.messages[i].parts.size()) return false;
    for (size_t j = 0; j < a.messages[i].parts.size(); ++j) {
      const ContentPart &x = a.messages[i].parts[j], &y = b.messages[i].parts[j];
      if (x.image != y.image || x.data != y.data) return false;
    }
  }
  return true;
}

void CheckRoundTrip(const GenerateRequest& r) {
  GenerateRequest back;
  std::string work;
  AppendGenerateWork(r, &work);
  const auto st = DecodeGenerateWork(work, &back);
  if (!st.ok()) std::fprintf(stderr, "the work message fails to decode: %s\n", st.message().c_str());
  FUZZ_CHECK(st.ok());
  FUZZ_CHECK(back.kind == r.kind && back.model == r.model && back.prompt == r.prompt);
  FUZZ_CHECK(SameMessages(back, r));
  FUZZ_CHECK(back.add_generation_prompt == r.add_generation_prompt);
  FUZZ_CHECK(back.sampling.max_tokens == r.sampling.max_tokens);
  FUZZ_CHECK(back.sampling.top_k == r.sampling.top_k);
  FUZZ_CHECK(back.sampling.seed == r.sampling.seed);
  FUZZ_CHECK(back.sampling.stop == r.sampling.stop);
  FUZZ_CHECK(back.sampling.stop_token_ids == r.sampling.stop_token_ids);
  FUZZ_CHECK(back.stream == r.stream && back.include_usage == r.include_usage);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % kParsers;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  ParseLimits limits;
  limits.max_items = 64;
  limits.max_item_bytes = 4096;
  WorkRequest req;
  GenerateRequest gen;
  switch (which) {
    case 0: if (ParseEncodeJson(body, limits, &req).ok()) CheckItems(req, limits); break;
    case 1: if (ParseOpenAiEmbeddings(body, limits, &req).ok()) CheckItems(req, limits); break;
    case 2: if (ParseScoreJson(body, limits, &req).ok()) CheckItems(req, limits); break;
    case 3:
      if (ParseRerankJson(body, limits, &req).ok()) {
        CheckItems(req, limits);
        FUZZ_CHECK(req.rerank.ids.empty() || req.rerank.ids.size() == req.items.size());
      }
      break;
    case 4: if (ParseTokenizeJson(body, limits, &req).ok()) CheckItems(req, limits); break;
    case 5: if (ParseChatCompletions(body, limits, &gen).ok()) CheckRoundTrip(gen); break;
    case 6: if (ParseCompletions(body, limits, &gen).ok()) CheckRoundTrip(gen); break;
    case 7: if (ParseGenerate(body, "fuzz-model", limits, &gen).ok()) CheckRoundTrip(gen); break;
    case 8: if (ParseExtractJson(body, limits, &req).ok()) CheckItems(req, limits); break;
  }
  return 0;
}
