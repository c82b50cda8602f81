// BERT's and RoBERTa's slow tokenizers (vocab.txt; vocab.json + merges.txt)
// as the tokenizer.json transformers' converters make of them — what
// AutoTokenizer gives a user of a checkpoint that ships no tokenizer.json
// (BertConverter, RobertaConverter in convert_slow_tokenizer.py):
//
//   BERT (BertTokenizer, DistilBertTokenizer, ElectraTokenizer):
//     BertNormalizer (clean_text; tokenize_chinese_chars, strip_accents and
//     do_lower_case from tokenizer_config.json — all off when
//     do_basic_tokenize is false), BertPreTokenizer, WordPiece ("##", 100
//     characters a word), "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B:1 [SEP]:1".
//     MPNet (MPNetTokenizer, MPNetConverter): the same with <s> </s> <pad>
//     <mask> by default and two </s> between a pair.
//   RoBERTa (RobertaTokenizer): byte-level BPE over the merges (the first
//     line, "#version", and the last dropped, as the slow tokenizer reads the
//     file), ByteLevel with add_prefix_space, RobertaProcessing.
//   XLM-R (XLMRobertaTokenizer, sentencepiece.bpe.model): fairseq's ids —
//     <s> <pad> </s> <unk>, then SentencePiece's pieces after its own three,
//     <mask> last; the model's charsmap, trailing spaces stripped, runs of
//     spaces one "▁"; Metaspace; Unigram; "<s> $A </s>" /
//     "<s> $A </s> </s> $B </s>" (XLMRobertaConverter).
//   DeBERTa-v2/v3 (DebertaV2Tokenizer, spm.model): SentencePiece's own ids,
//     [MASK] one past them; Lowercase when do_lower_case, Strip, the
//     charsmap, runs of spaces one space; Punctuation when split_by_punct,
//     Metaspace; "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B:1 [SEP]:1"
//     (DebertaV2Converter).
//
// Added tokens: tokenizer_config.json's added_tokens_decoder where it has
// one (every token with its flags), else the special tokens the config
// names, as the slow tokenizer registers them. A legacy added_tokens.json
// is the caller's to refuse.
//
// Errors: kModelLoadFailed naming the file and what is wrong.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"

namespace shoal::native::tok {

// `config`: tokenizer_config.json (an empty object where there is none).
enum class WordPieceLayout { kBert, kMpnet };
Result<std::string> BertTokenizerJson(std::string_view vocab_txt, const nlohmann::json& config,
                                      WordPieceLayout layout = WordPieceLayout::kBert);
Result<std::string> RobertaTokenizerJson(std::string_view vocab_json, std::string_view merges_txt,
                                         const nlohmann::json& config);
Result<std::string> XlmRobertaTokenizerJson(const SentencePieceModel& model,
                                            const nlohmann::json& config);
Result<std::string> DebertaV2TokenizerJson(const SentencePieceModel& model,
                                           const nlohmann::json& config);

}  // namespace shoal::native::tok
