// torch.save files read without PyTorch: bge-m3's head files, as Debian's
// torch wrote them for the test model, equal what torch.load reads; and
// broken or hostile files are refused with a reason, never a crash.
#include "runtime/native/loaders/torch_state_dict.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file.h"

namespace shoal::native {
namespace {

const std::string kHeads = std::string(SHOAL_TEST_MODELS) + "/bge-m3-tiny/";

// torch.load's view of the file: {name: {"shape": [...], "values": [...]}}.
nlohmann::json TorchLoad(const std::string& path) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("shoal-torch-load-" + std::to_string(::getpid()) + ".json")).string();
  const std::string cmd =
      "/usr/bin/python3 -c 'import json, sys, torch; d = torch.load(sys.argv[1], map_location=\"cpu\", "
      "weights_only=True); json.dump({k: {\"shape\": list(v.shape), \"values\": v.double().flatten().tolist()} "
      "for k, v in d.items()}, open(sys.argv[2], \"w\"))' " + path + " " + out;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  nlohmann::json j;
  std::ifstream(out) >> j;
  std::filesystem::remove(out);
  return j;
}

TEST(TorchStateDict, ReadsWhatTorchLoadReads) {
  for (const char* file : {"sparse_linear.pt", "colbert_linear.pt"}) {
    auto got = ReadTorchStateDict(kHeads + file);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const nlohmann::json want = TorchLoad(kHeads + file);
    ASSERT_EQ(got->size(), want.size()) << file;
    for (const auto& [name, tensor] : *got) {
      ASSERT_TRUE(want.contains(name)) << file << " " << name;
      EXPECT_EQ(tensor.shape, want[name]["shape"].get<std::vector<int64_t>>()) << name;
      const auto values = want[name]["values"].get<std::vector<double>>();
      ASSERT_EQ(tensor.values.size(), values.size()) << name;
      for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(tensor.values[i], static_cast<float>(values[i])) << name;
    }
  }
}

// Every byte of the file turned to 0xFF, and every length it could be cut
// to: an error or a state dict, never a crash (the sanitizer builds check
// the rest).
TEST(TorchStateDict, BrokenFilesAreRefusedNotTrustedToRun) {
  auto bytes = ReadFile(kHeads + "sparse_linear.pt");
  ASSERT_TRUE(bytes.ok());
  size_t refused = 0;
  for (size_t i = 0; i < bytes->size(); ++i) {
    std::string b = *bytes;
    b[i] = '\xff';
    refused += !ParseTorchStateDict(b, "flipped").ok();
    refused += !ParseTorchStateDict(std::string_view(*bytes).substr(0, i), "cut").ok();
  }
  EXPECT_GT(refused, bytes->size()) << "every cut is refused, and many flips";

  // A global outside a state dict's few: refused by name, not called.
  std::string hostile = *bytes;
  const size_t at = hostile.find("torch\nFloatStorage");
  ASSERT_NE(at, std::string::npos);
  hostile.replace(at, 18, "posix\nsystem\n\n\n\n\n\n");
  const auto s = ParseTorchStateDict(hostile, "hostile.pt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("global posix.system is not a part of a state dict"), std::string::npos)
      << s.status().message();

  const auto not_zip = ParseTorchStateDict("PK not really", "x.pt");
  ASSERT_FALSE(not_zip.ok());
  EXPECT_NE(not_zip.status().message().find("x.pt: not a torch.save zip"), std::string::npos);
}

}  // namespace
}  // namespace shoal::native
