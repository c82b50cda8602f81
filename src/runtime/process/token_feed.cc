#include "runtime/process/token_feed.h"

#include <algorithm>
#include <filesystem>

#include "runtime/call_stages.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/tokenize_task.h"

namespace shoal::runtime_process {
namespace {

// Tokenizes each input with `encode`; the ones that fail get their status
// in `out`. The time is the call's tokenize stage, as in the native runtime.
template <class In, class Out, class EncodeFn>
TokenFeed::Batch Tokenized(std::span<const In> in, std::span<Out> out, EncodeFn encode) {
  StageTimer tokenizing(&ThisCallStages().tokenize_us);
  TokenFeed::Batch b;
  for (size_t i = 0; i < in.size(); ++i) {
    auto e = encode(in[i]);
    if (!e.ok()) {
      out[i].status = e.status();
      continue;
    }
    b.sent.push_back(i);
    b.encodings.push_back(std::move(e).value());
  }
  for (size_t k = 0; k < b.sent.size(); ++k) {
    const In& x = in[b.sent[k]];
    TokenInput t{b.encodings[k].ids, b.encodings[k].type_ids, true, x.lora};
    if constexpr (std::is_same_v<In, EncodeInput>) t.normalize = x.normalize;
    b.inputs.push_back(t);
  }
  return b;
}

// Reads the runtime's results for the sent items (`read` fills a span of
// them) and moves them into their places, with the counts made here. Every
// item that succeeded holds a vector, all of one length.
template <class Out, class ReadFn>
Status Scatter(std::string_view ok, const TokenFeed::Batch& b, std::span<Out> out,
               std::vector<float> Out::*vector, ReadFn read) {
  std::vector<Out> got(b.sent.size());
  SHOAL_RETURN_IF_ERROR(read(ok, std::span<Out>(got)));
  size_t dim = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (!got[k].status.ok()) continue;
    const size_t n = (got[k].*vector).size();
    if (n == 0 || (dim != 0 && n != dim)) {
      return Internal("the reply's item " + std::to_string(k) + " has a vector of " +
                      std::to_string(n) + " values" +
                      (dim ? " (the others " + std::to_string(dim) + ")" : ""));
    }
    dim = n;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    Out& o = out[b.sent[k]];
    o = std::move(got[k]);
    if (!o.status.ok()) continue;
    o.tokens = static_cast<uint32_t>(b.encodings[k].ids.size());
    o.truncated = b.encodings[k].truncated;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TokenFeed>> TokenFeed::Open(const ModelConfig& config) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = config.path;
  if (fs::is_regular_file(dir, ec)) dir = dir.parent_path();
  auto tokenizer = native::LoadModelTokenizer(dir.string());
  if (!tokenizer.ok()) {
    return Status(tokenizer.status().code(), config.id + ": its runtime takes tokens, and Shoal tokenizes with the "
                                                         "model's own tokenizer: " + tokenizer.status().message());
  }
  return std::unique_ptr<TokenFeed>(
      new TokenFeed(std::move(tokenizer).value(), config.max_input_tokens));
}

void TokenFeed::CapTokens(uint32_t max_tokens) {
  if (max_tokens != 0) max_tokens_ = std::min(max_tokens_, max_tokens);
}

native::EncodeOptions TokenFeed::LimitFor(bool truncate) const {
  native::EncodeOptions o;
  o.add_special_tokens = true;
  o.max_length = max_tokens_;
  o.truncate = truncate;
  return o;
}

TokenFeed::Batch TokenFeed::Encode(std::span<const EncodeInput> in,
                                   std::span<EncodeOutput> out) const {
  return Tokenized(in, out, [&](const EncodeInput& x) {
    return tokenizer_->Encode(x.text, LimitFor(x.truncate));
  });
}

TokenFeed::Batch TokenFeed::Score(std::span<const ScoreInput> in,
                                  std::span<ScoreOutput> out) const {
  return Tokenized(in, out, [&](const ScoreInput& x) {
    return tokenizer_->EncodePair(x.text, x.text_pair, LimitFor(x.truncate));
  });
}

Status TokenFeed::ReadEncode(std::string_view ok, const Batch& b, std::span<EncodeOutput> out) {
  return Scatter(ok, b, out, &EncodeOutput::dense, ReadEncodeOutputs);
}

Status TokenFeed::ReadScore(std::string_view ok, const Batch& b, std::span<ScoreOutput> out) {
  return Scatter(ok, b, out, &ScoreOutput::logits, ReadScoreOutputs);
}

Status TokenFeed::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) const {
  return native::RunTokenize(*tokenizer_, in, out);
}

}  // namespace shoal::runtime_process
