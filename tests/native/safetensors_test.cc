#include "runtime/native/loaders/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace shoal::native {
namespace {

class SafeTensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shoal-st-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes a file: header JSON, padded as the format allows, then data.
  std::string Write(const std::string& header, const std::string& data, const char* name = "model.safetensors") {
    std::string h = header;
    while (h.size() % 8) h.push_back(' ');
    const uint64_t n = h.size();
    std::string bytes(reinterpret_cast<const char*>(&n), 8);
    bytes += h + data;
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::filesystem::path dir_;
};

std::string Floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(float));
}

TEST_F(SafeTensorsTest, ReadsF32InPlaceAndConvertsBf16AndF16) {
  // bf16 1.5 = 0x3FC0, f16 -2.0 = 0xC000.
  const std::string data = Floats({1.0f, 2.0f, 3.0f, 4.0f}) + std::string("\xC0\x3F\x00\xC0", 4);
  Write(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
        R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[16,18]},)"
        R"("c":{"dtype":"F16","shape":[1],"data_offsets":[18,20]},"__metadata__":{"format":"pt"}})",
        data);
  auto st = SafeTensors::OpenDir(dir_.string());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::vector<float> storage;
  auto a = (*st)->F32("a", {2, 2}, &storage);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(storage.empty()) << "f32 is used in place";
  EXPECT_EQ((*a)[3], 4.0f);
  auto b = (*st)->F32("b", {1}, &storage);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], 1.5f);
  std::vector<float> storage_c;
  auto c = (*st)->F32("c", {1}, &storage_c);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0], -2.0f);
  EXPECT_EQ((*st)->F32("a", {4}, &storage).status().code(), Code::kInvalidInput) << "shape checked";
  EXPECT_EQ((*st)->F32("zz", {1}, &storage).status().code(), Code::kInvalidInput);
}

TEST_F(SafeTensorsTest, RejectsCorruptFiles) {
  auto expect_error = [&](const std::string& header, const std::string& data, const std::string& needle) {
    const std::string path = Write(header, data);
    auto st = SafeTensors::OpenFile(path);
    ASSERT_FALSE(st.ok()) << header;
    EXPECT_NE(st.status().message().find(needle), std::string::npos) << st.status().ToString();
  };
  expect_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", Floats({1, 2}), "outside the data");
  expect_error(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", Floats({1, 2, 3, 4}), "needs 12 bytes");
  expect_error(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", Floats({1}), "not supported");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               Floats({1, 2, 3}), "overlap");
  expect_error(R"({"a": 3)", "", "not JSON");
  // A header length past the end of the file.
  const uint64_t huge = 1u << 20;
  const auto path = (dir_ / "short.safetensors").string();
  std::ofstream(path, std::ios::binary) << std::string(reinterpret_cast<const char*>(&huge), 8) << "{}";
  auto st = SafeTensors::OpenFile(path);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("does not fit"), std::string::npos);
}

TEST_F(SafeTensorsTest, OpensShardsListedByTheIndex) {
  Write(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({7}), "model-00001-of-00002.safetensors");
  Write(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({9}), "model-00002-of-00002.safetensors");
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  auto st = SafeTensors::OpenDir(dir_.string());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::vector<float> s;
  auto a = (*st)->F32("a", {1}, &s);
  auto b = (*st)->F32("b", {1}, &s);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0], 7.0f);
  EXPECT_EQ((*b)[0], 9.0f);
}

TEST_F(SafeTensorsTest, MissingWeightsAreAClearError) {
  auto st = SafeTensors::OpenDir(dir_.string());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("no model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace shoal::native
