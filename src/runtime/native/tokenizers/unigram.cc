// Unigram (SentencePiece): the segmentation of each piece that maximizes the
// sum of token log-probabilities (Viterbi over the lattice of vocabulary
// matches). A character no token starts with gets an unk edge scored
// min_score - 10; consecutive unks fuse into one; with byte_fallback an unk
// becomes the <0xXX> tokens of its bytes when the vocabulary has them all.
// Ties keep the path found first (earliest start), as the Rust crate does.
//
// Threading: immutable after ParseUnigram; scratch is thread_local.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "runtime/native/tokenizers/model.h"
#include "runtime/native/tokenizers/unicode.h"
#include "runtime/native/tokenizers/vocab.h"

namespace shoal::native::tok {
namespace {

constexpr double kUnkPenalty = 10.0;

class UnigramModel final : public Model {
 public:
  void Tokenize(std::string_view piece, std::vector<ModelToken>& out) const override {
    const auto n = static_cast<uint32_t>(piece.size());
    struct Best {
      double score;
      uint32_t prev;  // start of the token that ends here
      int32_t id;     // -1: unk edge
      bool reached;
    };
    thread_local std::vector<Best> best;
    best.assign(n + 1, Best{0.0, 0, -1, false});
    best[0].reached = true;
    for (uint32_t start = 0; start < n;) {
      const auto clen = static_cast<uint32_t>(Utf8Length(static_cast<unsigned char>(piece[start])));
      if (best[start].reached) {
        const double base = best[start].score;
        bool single = false;
        const uint32_t limit =
            std::min<uint32_t>(n, start + static_cast<uint32_t>(max_piece_bytes_));
        for (uint32_t end = start + clen; end <= limit;) {
          if (auto id = vocab_.Find(piece.substr(start, end - start))) {
            Relax(best[end], base + scores_[*id], start, *id);
            if (end == start + clen) single = true;
          }
          if (end == n) break;
          end += static_cast<uint32_t>(Utf8Length(static_cast<unsigned char>(piece[end])));
        }
        if (!single) Relax(best[std::min(start + clen, n)], base + unk_score_, start, -1);
      }
      start += clen;
    }

    // Backtrack, then emit left to right with unks fused.
    thread_local std::vector<ModelToken> path;
    path.clear();
    for (uint32_t at = n; at > 0;) {
      const Best& b = best[at];
      path.push_back({b.id, b.prev, at});
      at = b.prev;
    }
    std::reverse(path.begin(), path.end());
    for (size_t k = 0; k < path.size(); ++k) {
      ModelToken t = path[k];
      if (t.id >= 0) {
        out.push_back(t);
        continue;
      }
      while (k + 1 < path.size() && path[k + 1].id < 0) t.end = path[++k].end;
      EmitUnknown(piece, t.start, t.end, out);
    }
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(int32_t id) const override { return vocab_.Token(id); }
  std::optional<int32_t> unk_id() const override { return unk_id_; }
  size_t id_space() const override { return vocab_.id_space(); }

  Status Load(Json json) {
    SHOAL_ASSIGN_OR_RETURN(Json vocab, ReqField(json, "vocab", "model"));
    simdjson::dom::array arr;
    if (vocab.get_array().get(arr) != simdjson::SUCCESS) {
      return LoadError("model.vocab", "expected an array of [token, score]");
    }
    vocab_.Reserve(arr.size(), arr.size() * 8);
    scores_.reserve(arr.size());
    double min_score = std::numeric_limits<double>::infinity();
    int32_t id = 0;
    for (Json item : arr) {
      simdjson::dom::array pair;
      std::string_view token;
      std::string where = Index("model.vocab", static_cast<size_t>(id));
      Json score_json;
      if (item.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
          pair.at(0).get_string().get(token) != simdjson::SUCCESS ||
          pair.at(1).get(score_json) != simdjson::SUCCESS) {
        return LoadError(where, "expected [token, score]");
      }
      SHOAL_ASSIGN_OR_RETURN(double score, ToDouble(score_json, where));
      vocab_.Add(token, id);
      scores_.push_back(score);
      min_score = std::min(min_score, score);
      max_piece_bytes_ = std::max(max_piece_bytes_, token.size());
      ++id;
    }
    unk_score_ = (scores_.empty() ? 0.0 : min_score) - kUnkPenalty;
    SHOAL_ASSIGN_OR_RETURN(auto unk, OptInt(json, "unk_id", "model"));
    if (unk) {
      if (*unk < 0 || *unk >= id) return LoadError("model.unk_id", "out of the vocabulary");
      unk_id_ = static_cast<int32_t>(*unk);
    }
    SHOAL_ASSIGN_OR_RETURN(byte_fallback_, OptBool(json, "byte_fallback", false, "model"));
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      fallback_ids_[b] = vocab_.Find(name).value_or(-1);
    }
    return Status::Ok();
  }

 private:
  static void Relax(auto& slot, double score, uint32_t prev, int32_t id) {
    // Strictly greater: on a tie the earlier (shorter-start) path stays.
    if (!slot.reached || score > slot.score) slot = {score, prev, id, true};
  }

  void EmitUnknown(std::string_view piece, uint32_t start, uint32_t end,
                   std::vector<ModelToken>& out) const {
    if (byte_fallback_) {
      bool all = true;
      for (uint32_t k = start; k < end; ++k) {
        if (fallback_ids_[static_cast<unsigned char>(piece[k])] < 0) all = false;
      }
      if (all) {
        for (uint32_t k = start; k < end; ++k) {
          out.push_back({fallback_ids_[static_cast<unsigned char>(piece[k])], k, k + 1});
        }
        return;
      }
    }
    if (unk_id_) out.push_back({*unk_id_, start, end});
  }

  Vocab vocab_;
  std::vector<double> scores_;
  double unk_score_ = -kUnkPenalty;
  size_t max_piece_bytes_ = 0;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  int32_t fallback_ids_[256];
};

}  // namespace

Result<std::unique_ptr<Model>> ParseUnigram(Json json) {
  auto model = std::make_unique<UnigramModel>();
  SHOAL_RETURN_IF_ERROR(model->Load(json));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace shoal::native::tok
