// The MessagePack reader and writer, checked against msgpack-cxx (an
// independent implementation) in both directions.
#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <random>

#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"
#include "wire/transcode.h"

namespace shoal::wire {
namespace {

template <class T>
std::string PackValue(const T& v) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, v);
  return std::string(buf.data(), buf.size());
}

TEST(MsgpackWriter, IntegersDecodeInMsgpackCxxAtEveryWidthBoundary) {
  const int64_t values[] = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295LL, 4294967296LL,
                            INT64_MAX, -1, -32, -33, -128, -129, -32768, -32769,
                            INT32_MIN, static_cast<int64_t>(INT32_MIN) - 1, INT64_MIN};
  for (int64_t v : values) {
    std::string out;
    MsgpackWriter(&out).Int(v);
    auto handle = msgpack::unpack(out.data(), out.size());
    EXPECT_EQ(handle.get().as<int64_t>(), v);
    // And our reader agrees with msgpack-cxx's own encoding.
    const std::string theirs = PackValue(v);
    EXPECT_EQ(out, theirs) << "smallest encoding for " << v;
    MsgpackReader r(theirs);
    int64_t back = 0;
    ASSERT_TRUE(r.ReadInt(&back));
    EXPECT_EQ(back, v);
    EXPECT_TRUE(r.AtEnd());
  }
}

TEST(MsgpackWriter, StringsBinariesAndContainersAtLengthBoundaries) {
  for (size_t n : {0, 31, 32, 255, 256, 65535, 65536}) {
    const std::string s(n, 'x');
    std::string out;
    MsgpackWriter w(&out);
    w.Str(s);
    w.Bin(s);
    w.ArrayHeader(static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) w.Nil();
    w.MapHeader(1);
    w.Str("k");
    w.Bool(true);

    size_t off = 0;
    auto h1 = msgpack::unpack(out.data(), out.size(), off);
    EXPECT_EQ(h1.get().as<std::string>(), s);
    auto h2 = msgpack::unpack(out.data(), out.size(), off);
    ASSERT_EQ(h2.get().type, msgpack::type::BIN);
    EXPECT_EQ(h2.get().via.bin.size, n);
    auto h3 = msgpack::unpack(out.data(), out.size(), off);
    ASSERT_EQ(h3.get().type, msgpack::type::ARRAY);
    EXPECT_EQ(h3.get().via.array.size, n);
    auto h4 = msgpack::unpack(out.data(), out.size(), off);
    EXPECT_TRUE((h4.get().as<std::map<std::string, bool>>().at("k")));
    EXPECT_EQ(off, out.size());

    MsgpackReader r(out);
    std::string_view sv;
    ASSERT_TRUE(r.ReadStr(&sv));
    EXPECT_EQ(sv, s);
    ASSERT_TRUE(r.ReadBin(&sv));
    EXPECT_EQ(sv.size(), n);
    uint32_t count;
    ASSERT_TRUE(r.ReadArrayHeader(&count));
    EXPECT_EQ(count, n);
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r.ReadNil());
    ASSERT_TRUE(r.Skip());
    EXPECT_TRUE(r.AtEnd());
  }
}

TEST(MsgpackWriter, FloatsAreExact) {
  std::string out;
  MsgpackWriter w(&out);
  w.Float32(0.1f);
  w.Float64(-2.5e300);
  size_t off = 0;
  EXPECT_EQ(msgpack::unpack(out.data(), out.size(), off).get().as<float>(), 0.1f);
  EXPECT_EQ(msgpack::unpack(out.data(), out.size(), off).get().as<double>(), -2.5e300);
  MsgpackReader r(out);
  double d;
  ASSERT_TRUE(r.ReadDouble(&d));
  EXPECT_EQ(static_cast<float>(d), 0.1f);
  ASSERT_TRUE(r.ReadDouble(&d));
  EXPECT_EQ(d, -2.5e300);
}

TEST(MsgpackReader, SkipsWhateverMsgpackCxxWrites) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("a"));
  pk.pack_array(5);
  pk.pack(1);
  pk.pack(std::string("two"));
  pk.pack(3.5);
  pk.pack_nil();
  pk.pack(true);
  pk.pack(std::string("b"));
  pk.pack(std::string(300, 'y'));
  pk.pack(std::string("c"));
  pk.pack_map(1);
  pk.pack(std::string("d"));
  pk.pack_bin(2);
  pk.pack_bin_body("\x00\x01", 2);
  const std::string doc(buf.data(), buf.size());
  MsgpackReader r(doc);
  std::string_view raw;
  ASSERT_TRUE(r.ReadRaw(&raw));
  EXPECT_EQ(raw.size(), doc.size());
  EXPECT_TRUE(r.AtEnd());
}

TEST(MsgpackReader, RejectsTruncatedInputAtEveryCut) {
  std::vector<std::string> doc_parts = {"hello", std::string(40, 'z')};
  std::map<std::string, std::vector<std::string>> m = {{"items", doc_parts}};
  const std::string doc = PackValue(m);
  for (size_t cut = 0; cut < doc.size(); ++cut) {
    MsgpackReader r(std::string_view(doc).substr(0, cut));
    EXPECT_FALSE(r.Skip()) << "cut at " << cut;
    EXPECT_EQ(r.offset(), 0u) << "a failed read leaves the cursor in place";
  }
}

TEST(MsgpackReader, ContainerHeadersCannotClaimMoreThanTheBuffer) {
  // array32 of 4 billion elements in 5 bytes.
  const std::string bomb = "\xdd\xff\xff\xff\xff";
  MsgpackReader r(bomb);
  EXPECT_FALSE(r.Skip());
  // 0xc1 is never valid.
  MsgpackReader bad("\xc1");
  EXPECT_EQ(bad.Peek(), MsgpackType::kInvalid);
  EXPECT_FALSE(bad.Skip());
}

TEST(MsgpackReader, RandomBytesNeverCrashOrOverrun) {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string junk(rng() % 24, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    MsgpackReader r(junk);
    if (r.Skip()) { EXPECT_LE(r.offset(), junk.size()); }
  }
}

TEST(MsgpackReader, ReadIntRejectsUnsignedAboveInt64) {
  const std::string big = PackValue(uint64_t{UINT64_MAX});
  MsgpackReader r(big);
  int64_t v;
  EXPECT_FALSE(r.ReadInt(&v));
  double d;
  EXPECT_TRUE(r.ReadDouble(&d));
}

TEST(Transcode, MsgpackToJsonMatchesTheDocument) {
  std::string doc;
  MsgpackWriter w(&doc);
  w.MapHeader(4);
  w.Str("dense");
  w.ArrayHeader(3);
  w.Float32(0.5f);
  w.Float32(-1.25f);
  w.Float32(0.1f);
  w.Str("n");
  w.Int(-3);
  w.Str("s\"q");
  w.Str("line\nbreak");
  w.Str("b");
  w.Bin("\x01\x02\x03");
  std::string json;
  ASSERT_TRUE(MsgpackToJson(doc, &json).ok());
  EXPECT_EQ(json, R"({"dense":[0.5,-1.25,0.1],"n":-3,"s\"q":"line\nbreak","b":"AQID"})");
}

TEST(Transcode, RejectsNonStringKeysAndTrailingBytes) {
  std::string doc;
  MsgpackWriter w(&doc);
  w.MapHeader(1);
  w.Int(1);
  w.Int(2);
  std::string json;
  EXPECT_FALSE(MsgpackToJson(doc, &json).ok());
  std::string two;
  MsgpackWriter(&two).Int(1);
  MsgpackWriter(&two).Int(2);
  json.clear();
  EXPECT_FALSE(MsgpackToJson(two, &json).ok());
}

TEST(Transcode, JsonToMsgpackIsWhatMsgpackCxxReads) {
  std::string packed;
  ASSERT_TRUE(JsonToMsgpack(R"({"scores":[0.25,-1e3,7],"big":18446744073709551615,"ok":true,"none":null,)"
                            R"("s":"caf\u00e9","nested":{"a":[]}})",
                            &packed)
                  .ok());
  const msgpack::object_handle h = msgpack::unpack(packed.data(), packed.size());
  const auto m = h.get().as<std::map<std::string, msgpack::object>>();
  const auto scores = m.at("scores").as<std::vector<msgpack::object>>();
  EXPECT_EQ(scores[0].as<double>(), 0.25);
  EXPECT_EQ(scores[1].as<double>(), -1000.0);
  EXPECT_EQ(scores[2].type, msgpack::type::POSITIVE_INTEGER) << "an integer stays an integer";
  EXPECT_EQ(m.at("big").as<uint64_t>(), 18446744073709551615ull);
  EXPECT_TRUE(m.at("ok").as<bool>());
  EXPECT_TRUE(m.at("none").is_nil());
  EXPECT_EQ(m.at("s").as<std::string>(), "caf\xC3\xA9");
  EXPECT_EQ(m.at("nested").type, msgpack::type::MAP);
  std::string bad;
  EXPECT_EQ(JsonToMsgpack("{\"a\":", &bad).code(), Code::kInternal);
}

TEST(Transcode, AClientBodyIsJsonOrAClearError) {
  std::string doc;
  MsgpackWriter w(&doc);
  w.MapHeader(2);
  w.Str("query");
  w.Str("q");
  w.Str("texts");
  w.ArrayHeader(1);
  w.Str("a");
  std::string json;
  ASSERT_TRUE(MsgpackBodyToJson(doc, &json).ok());
  EXPECT_EQ(json, R"({"query":"q","texts":["a"]})");
  std::string bytes;
  MsgpackWriter b(&bytes);
  b.MapHeader(1);
  b.Str("query");
  b.Bin("q");
  json.clear();
  const Status refused = MsgpackBodyToJson(bytes, &json);
  EXPECT_EQ(refused.code(), Code::kInvalidInput) << "a binary where text belongs is no text";
  json.clear();
  EXPECT_EQ(MsgpackBodyToJson(doc + "x", &json).message(), "body: trailing bytes after the request");
  json.clear();
  EXPECT_EQ(MsgpackBodyToJson("", &json).message(), "body: empty");
}

}  // namespace
}  // namespace shoal::wire
