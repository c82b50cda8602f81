// A model directory's tokenizer picked from its files (model_tokenizer.h):
// SentencePiece model files read without protobuf (sentencepiece_model.h),
// SigLIP's tokenizer made of one (siglip_tokenizer.h), BERT's and RoBERTa's
// slow files converted (converted_tokenizers.h). The SentencePiece bytes are
// written here, field by field, from sentencepiece_model.proto's numbering.
// The reference tests: sentencepiece_reference_test.sh on the seeded
// siglip-tiny (against the sentencepiece library), reference_test.sh
// --slow-files on seeded BERT, ELECTRA and RoBERTa models (against @lenml on
// their tokenizer.json).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"
#include "runtime/native/tokenizers/siglip_tokenizer.h"
#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

namespace fs = std::filesystem;
using tok::SentencePieceModel;

// Protocol buffers' wire format, as much as a model file needs.
void Varint(std::string* out, uint64_t v) {
  do {
    const auto byte = static_cast<uint8_t>(v & 0x7f);
    v >>= 7;
    out->push_back(static_cast<char>(byte | (v ? 0x80 : 0)));
  } while (v);
}
std::string Key(uint32_t field, uint32_t wire) {
  std::string k;
  Varint(&k, field << 3 | wire);
  return k;
}
std::string Bytes(uint32_t field, std::string_view bytes) {
  std::string out = Key(field, 2);
  Varint(&out, bytes.size());
  out.append(bytes);
  return out;
}
std::string Number(uint32_t field, int64_t v) {
  std::string out = Key(field, 0);
  Varint(&out, static_cast<uint64_t>(v));
  return out;
}
std::string Piece(std::string_view text, float score, int type = 1) {
  std::string body = Bytes(1, text) + Key(2, 5);
  body.append(reinterpret_cast<const char*>(&score), 4);
  if (type != 1) body += Number(3, type);
  return Bytes(1, body);
}

// SigLIP's layout: <pad> </s> <unk> (control, control, unknown), then words;
// no <s> (bos_id -1, sent as ten bytes), no normalization rules.
std::string SiglipLikeModel(std::string extra_pieces = "", int model_type = 1) {
  std::string m = Piece("<pad>", 0, 3) + Piece("</s>", 0, 3) + Piece("<unk>", 0, 2) +
                  Piece("\u2581hello", -1) + Piece("\u2581world", -2) + Piece("\u2581", -3) +
                  Piece("\u03c3", -4) + Piece("\u03c2", -4) + extra_pieces;
  m += Bytes(2, Number(3, model_type) + Number(40, 2) + Number(41, -1) + Number(42, 1) +
                    Number(43, 0) + Bytes(2, "prefix") + Number(35, 0));
  m += Bytes(3, Bytes(1, "identity") + Number(3, 1) + Number(4, 1));
  return m;
}

TEST(SentencePieceModel, ReadsPiecesIdsAndRules) {
  auto m = tok::ParseSentencePieceModel(SiglipLikeModel(), "spiece.model");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->pieces.size(), 8u);
  EXPECT_EQ(m->pieces[1].piece, "</s>");
  EXPECT_EQ(m->pieces[1].type, SentencePieceModel::PieceType::kControl);
  EXPECT_EQ(m->pieces[2].type, SentencePieceModel::PieceType::kUnknown);
  EXPECT_EQ(m->pieces[4].score, -2.0f);
  EXPECT_EQ(m->unk_id, 2);
  EXPECT_EQ(m->bos_id, -1);
  EXPECT_EQ(m->eos_id, 1);
  EXPECT_EQ(m->pad_id, 0);
  EXPECT_EQ(m->normalizer_name, "identity");
  EXPECT_TRUE(m->precompiled_charsmap.empty());
  EXPECT_TRUE(m->add_dummy_prefix);
}

TEST(SentencePieceModel, RefusesWhatIsNotAModel) {
  const std::string good = SiglipLikeModel();
  for (size_t cut : {size_t{1}, size_t{5}, good.size() - 3}) {
    auto m = tok::ParseSentencePieceModel(std::string_view(good).substr(0, cut), "spiece.model");
    EXPECT_EQ(m.status().code(), Code::kModelLoadFailed) << cut;
    EXPECT_NE(m.status().message().find("spiece.model: "), std::string::npos)
        << m.status().message();
  }
  EXPECT_EQ(tok::ParseSentencePieceModel("{\"version\": \"1.0\"}", "spiece.model").status().code(),
            Code::kModelLoadFailed);
  EXPECT_EQ(tok::ParseSentencePieceModel("", "spiece.model").status().message(),
            "spiece.model: no pieces (is this a model file?)");
  // The unknown id names a piece that is not the unknown one.
  auto m = tok::ParseSentencePieceModel(Piece("a", 0) + Bytes(2, Number(40, 0)), "spiece.model");
  EXPECT_NE(m.status().message().find("unk_id 0"), std::string::npos) << m.status().message();
  m = tok::ParseSentencePieceModel(Piece("a\xff" "b", 0), "spiece.model");
  EXPECT_EQ(m.status().message(), "spiece.model: a piece is not UTF-8");
  m = tok::ParseSentencePieceModel(Piece("a", 0, 9), "spiece.model");
  EXPECT_NE(m.status().message().find("piece type 9"), std::string::npos) << m.status().message();
}

std::unique_ptr<Tokenizer> Siglip(const std::string& model_bytes, bool lower = true) {
  auto m = tok::ParseSentencePieceModel(model_bytes, "spiece.model");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  auto json = tok::SiglipTokenizerJson(*m, {.do_lower_case = lower});
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  return json.ok() ? MustParse(*json) : nullptr;
}

TEST(SiglipTokenizer, CanonicalizesLowersAndEndsWithEos) {
  auto t = Siglip(SiglipLikeModel());
  ASSERT_TRUE(t);
  // Punctuation gone, whitespace one space, ends stripped, lower-cased.
  EXPECT_EQ(Ids(*t, "  Hello,\t\u3000WORLD!! "), (std::vector<int32_t>{3, 4, 1}));
  EXPECT_EQ(Ids(*t, "hello world", false), (std::vector<int32_t>{3, 4}));
  // Python's lower(): a final capital sigma is "ς", another "σ".
  EXPECT_EQ(Ids(*t, "\u03a3\u03a3", false), (std::vector<int32_t>{5, 6, 7}));
  // Punctuation only: nothing but the end.
  EXPECT_EQ(Ids(*t, "?!"), (std::vector<int32_t>{1}));
  auto cased = Siglip(SiglipLikeModel(), /*lower=*/false);
  ASSERT_TRUE(cased);
  EXPECT_EQ(Ids(*cased, "Hello world", false), (std::vector<int32_t>{5, 2, 4}));
}

TEST(SiglipTokenizer, RefusesWhatItCannotConvert) {
  auto bpe = tok::ParseSentencePieceModel(SiglipLikeModel("", /*model_type=*/2), "spiece.model");
  ASSERT_TRUE(bpe.ok());
  EXPECT_NE(tok::SiglipTokenizerJson(*bpe, {}).status().message().find("only a Unigram model"),
            std::string::npos);
  auto user = tok::ParseSentencePieceModel(SiglipLikeModel(Piece("<img>", 0, 4)), "spiece.model");
  ASSERT_TRUE(user.ok());
  EXPECT_NE(
      tok::SiglipTokenizerJson(*user, {}).status().message().find("user-defined piece '<img>'"),
      std::string::npos);
  auto unescaped =
      tok::ParseSentencePieceModel(SiglipLikeModel() + Bytes(3, Number(5, 0)), "spiece.model");
  ASSERT_TRUE(unescaped.ok());
  EXPECT_NE(tok::SiglipTokenizerJson(*unescaped, {}).status().message().find("escape_whitespaces"),
            std::string::npos);
  auto fine = tok::ParseSentencePieceModel(SiglipLikeModel(), "spiece.model");
  EXPECT_NE(
      tok::SiglipTokenizerJson(*fine, {.eos_token = "<eos>"}).status().message().find("'<eos>'"),
      std::string::npos);
}

class ModelTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal-model-tokenizer-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  fs::path dir_;
};

TEST_F(ModelTokenizer, ReadsSiglipsSpieceModelWhenThereIsNoTokenizerJson) {
  Write("spiece.model", SiglipLikeModel());
  Write("tokenizer_config.json", R"({"tokenizer_class": "SiglipTokenizer", "do_lower_case": true,
                                     "eos_token": {"content": "</s>", "__type": "AddedToken"},
                                     "additional_special_tokens": []})");
  auto t = LoadModelTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "Hello world."), (std::vector<int32_t>{3, 4, 1}));

  Write("tokenizer_config.json",
        R"({"tokenizer_class": "SiglipTokenizer", "additional_special_tokens": ["<x>"]})");
  EXPECT_NE(LoadModelTokenizer(dir_.string()).status().message().find("additional_special_tokens"),
            std::string::npos);
  Write("tokenizer_config.json", R"({"tokenizer_class": "T5Tokenizer"})");
  auto t5 = LoadModelTokenizer(dir_.string());
  EXPECT_EQ(t5.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(t5.status().message().find("T5Tokenizer is not converted here"), std::string::npos)
      << t5.status().message();
  // SigLIP's layout is not XLM-R's, whose converter drops <unk> <s> </s>.
  Write("sentencepiece.bpe.model", SiglipLikeModel());
  Write("tokenizer_config.json", R"({"tokenizer_class": "XLMRobertaTokenizer"})");
  EXPECT_NE(LoadModelTokenizer(dir_.string()).status().message().find("not XLM-R's layout"),
            std::string::npos);
  Write("tokenizer_config.json", R"({"tokenizer_class": 7})");
  EXPECT_NE(LoadModelTokenizer(dir_.string()).status().message().find("tokenizer.json"),
            std::string::npos);
  Write("tokenizer_config.json", "not json");
  EXPECT_NE(LoadModelTokenizer(dir_.string())
                .status()
                .message()
                .find("tokenizer_config.json: not a JSON object"),
            std::string::npos);
}

TEST_F(ModelTokenizer, ATokenizerJsonComesFirst) {
  Write("spiece.model", "garbage");
  Write("tokenizer_config.json", R"({"tokenizer_class": "SiglipTokenizer"})");
  EXPECT_EQ(LoadModelTokenizer(dir_.string()).status().code(), Code::kModelLoadFailed)
      << "spiece.model is read";
  Write("tokenizer.json",
        R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "hi": 1}},
                              "pre_tokenizer": {"type": "Whitespace"}})");
  auto t = LoadModelTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "hi"), (std::vector<int32_t>{1}));
}

TEST_F(ModelTokenizer, ConvertsBertsVocabTxtAsBertConverterDoes) {
  Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\nworld\n!\nHello\n");
  // No tokenizer_config.json: config.json's model_type names BertTokenizer,
  // whose defaults lower-case.
  Write("config.json", R"({"model_type": "bert"})");
  auto t = LoadModelTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "Hello worlds!"), (std::vector<int32_t>{2, 5, 7, 6, 8, 3}));
  EXPECT_EQ(Ids(**t, "[MASK] hello"), (std::vector<int32_t>{2, 4, 5, 3}))
      << "specials matched as added tokens";
  // A cased model; and one without a basic tokenizer, which the converter
  // leaves without any of BertNormalizer's options.
  Write("tokenizer_config.json",
        R"({"tokenizer_class": "BertTokenizerFast", "do_lower_case": false})");
  ASSERT_TRUE((t = LoadModelTokenizer(dir_.string())).ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "Hello hello", false), (std::vector<int32_t>{9, 5}));
  Write("tokenizer_config.json",
        R"({"tokenizer_class": "BertTokenizer", "do_basic_tokenize": false})");
  ASSERT_TRUE((t = LoadModelTokenizer(dir_.string())).ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "Hello", false), (std::vector<int32_t>{9}));

  Write("tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer", "cls_token": "<s>"})");
  EXPECT_NE(LoadModelTokenizer(dir_.string())
                .status()
                .message()
                .find("vocab.txt: the special tokens <s>"),
            std::string::npos);
  Write("tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})");
  Write("added_tokens.json", R"({"<new>": 10})");
  EXPECT_NE(LoadModelTokenizer(dir_.string()).status().message().find("added_tokens.json"),
            std::string::npos);
  Write("tokenizer_config.json", R"({"tokenizer_class": "CamembertTokenizer"})");
  EXPECT_NE(LoadModelTokenizer(dir_.string())
                .status()
                .message()
                .find("CamembertTokenizer is not converted here"),
            std::string::npos);
}

TEST_F(ModelTokenizer, ConvertsRobertasVocabAndMergesAsRobertaConverterDoes) {
  // Byte-level pieces: "\u0120" is the space byte.
  Write("vocab.json",
        R"({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "h": 4, "i": 5, "hi": 6, "\u0120": 7,
                          "\u0120hi": 8, "<mask>": 9})");
  Write("merges.txt", "#version: 0.2\nh i\n\u0120 hi\n");
  Write("tokenizer_config.json", R"({"tokenizer_class": "RobertaTokenizer"})");
  auto t = LoadModelTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "hi hi"), (std::vector<int32_t>{0, 6, 8, 2}));
  EXPECT_EQ(Ids(**t, "hi <mask>", false), (std::vector<int32_t>{6, 9}))
      << "<mask> takes the space before it";
  // The slow tokenizer drops merges.txt's last line, newline or not.
  Write("merges.txt", "#version: 0.2\nh i\n\u0120 hi");
  ASSERT_TRUE((t = LoadModelTokenizer(dir_.string())).ok()) << t.status().ToString();
  EXPECT_EQ(Ids(**t, "hi hi", false), (std::vector<int32_t>{6, 7, 6}));
  Write("merges.txt", "#version: 0.2\nh i\nh\n\u0120 hi\n");
  EXPECT_EQ(LoadModelTokenizer(dir_.string()).status().message(),
            "merges.txt: line 3 is not a pair of tokens");
  Write("merges.txt", "#version: 0.2\n");
  Write("vocab.json", R"({"hi": "one"})");
  EXPECT_EQ(LoadModelTokenizer(dir_.string()).status().message(), "vocab.json: hi: expected an id");
}

}  // namespace
}  // namespace shoal::native::testing
