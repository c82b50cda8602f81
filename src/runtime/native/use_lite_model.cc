#include "runtime/native/use_lite_model.h"

#include <algorithm>

#include "runtime/call_stages.h"

namespace shoal::native {

Result<std::unique_ptr<Model>> UseLiteModel::Load(const ModelConfig& spec, int threads) {
  if (spec.task != Task::kEncode) {
    return InvalidInput("USE-Lite encodes; it cannot serve task " + std::string(TaskName(spec.task)));
  }
  std::unique_ptr<UseLiteModel> m(new UseLiteModel());
  m->config_ = spec;
  m->threads_ = std::max(1, threads);
  m->max_tokens_ = std::min<size_t>(spec.max_input_tokens, UseLite::kMaxTokens);
  auto u = UseLite::Load(spec.path);
  if (!u.ok()) return u.status();
  m->use_lite_ = std::move(u).value();
  return std::unique_ptr<Model>(std::move(m));
}

Status UseLiteModel::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  // One pass per normalization choice (a batch is almost always all one).
  for (bool normalize : {true, false}) {
    std::vector<std::vector<int32_t>> sentences;
    std::vector<size_t> index;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].normalize != normalize) continue;
      std::vector<int32_t> ids;
      {
        StageTimer tokenizing(&ThisCallStages().tokenize_us);
        ids = use_lite_->Tokenize(in[i].text);
      }
      if (ids.size() > max_tokens_) {
        if (!in[i].truncate) {
          out[i].status = InvalidInput("input is " + std::to_string(ids.size()) +
                                       " tokens, over the model's limit of " + std::to_string(max_tokens_) +
                                       "; set truncate to cut it");
          continue;
        }
        ids.resize(max_tokens_);
        out[i].truncated = true;
      }
      out[i].tokens = static_cast<uint32_t>(ids.size());
      sentences.push_back(std::move(ids));
      index.push_back(i);
    }
    if (sentences.empty()) continue;
    std::vector<float> vectors(sentences.size() * UseLite::kDim);
    SHOAL_RETURN_IF_ERROR(use_lite_->Embed(sentences, normalize, vectors.data(), threads_));
    for (size_t k = 0; k < index.size(); ++k) {
      EncodeOutput& o = out[index[k]];
      o.status = Status::Ok();
      o.dense.assign(vectors.begin() + k * UseLite::kDim, vectors.begin() + (k + 1) * UseLite::kDim);
    }
  }
  return Status::Ok();
}

Status UseLiteModel::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  for (size_t i = 0; i < in.size(); ++i) {
    out[i].status = Status::Ok();
    // USE-Lite adds no special tokens, and its pieces come from the NFKC form
    // of the text, so they carry no byte offsets into the input.
    for (int32_t id : use_lite_->Tokenize(in[i].text)) {
      Token t;
      t.id = id;
      t.text = std::string(use_lite_->Piece(id));
      out[i].tokens.push_back(std::move(t));
    }
  }
  return Status::Ok();
}

}  // namespace shoal::native
