// The two varlen attention kernels (kernels/cuda/encoder_kernels.h) against a
// float64 reference on the host, on seeded random q, k, v rounded to bf16 as
// the device sees them: every head size, sequence lengths around and across
// the 64-row tiles, several sequences packed in one call. Skips without a GPU.
//
// The bound: the kernels round the probabilities to bf16 before P·V and the
// output to bf16, so each output may be off by a few bf16 steps of the
// values' scale (|v| ≤ 1 here): 2e-2 absolute, and the two kernels must agree
// with each other as closely.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/native/kernels/cuda/device_memory.h"
#include "runtime/native/kernels/cuda/encoder_kernels.h"
#include "runtime/native/kernels/cuda/host_bf16.h"

namespace shoal::native::cuda {
namespace {

double FromBf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

struct Case {
  int heads, head_dim;
  std::vector<int> lengths;
};

// out[t][h·D + d] in float64, each sequence attending over its own rows.
std::vector<double> Reference(const std::vector<uint16_t>& qkv, const Case& c, const std::vector<int>& offsets) {
  const int H = c.heads, D = c.head_dim, hidden = H * D;
  std::vector<double> out(static_cast<size_t>(offsets.back()) * hidden);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto at = [&](int row, int part, int h, int d) { return FromBf16(qkv[(size_t(row) * 3 + part) * hidden + h * D + d]); };
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    const int begin = offsets[s], len = offsets[s + 1] - begin;
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < len; ++i) {
        std::vector<double> w(len);
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < len; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += at(begin + i, 0, h, d) * at(begin + j, 1, h, d);
          w[j] = dot * scale;
          m = std::max(m, w[j]);
        }
        for (double& x : w) sum += (x = std::exp(x - m));
        for (int d = 0; d < D; ++d) {
          double acc = 0;
          for (int j = 0; j < len; ++j) acc += w[j] * at(begin + j, 2, h, d);
          out[size_t(begin + i) * hidden + h * D + d] = acc / sum;
        }
      }
    }
  }
  return out;
}

std::vector<double> RunKernel(AttentionKernel kernel, const std::vector<uint16_t>& qkv, const Case& c,
                              const std::vector<int>& offsets) {
  const size_t tokens = offsets.back(), hidden = size_t(c.heads) * c.head_dim;
  DeviceBuffer d_qkv, d_offsets, d_out;
  EXPECT_TRUE(d_qkv.Upload(qkv.data(), qkv.size() * sizeof(uint16_t)).ok());
  EXPECT_TRUE(d_offsets.Upload(offsets.data(), offsets.size() * sizeof(int)).ok());
  EXPECT_TRUE(d_out.Allocate(tokens * hidden * sizeof(uint16_t)).ok());
  EXPECT_EQ(cudaMemset(d_out.data(), 0xff, d_out.bytes()), cudaSuccess);  // NaNs where nothing is written
  const int max_len = *std::max_element(c.lengths.begin(), c.lengths.end());
  EXPECT_EQ(VarlenAttention(d_qkv.as<bf16>(), d_offsets.as<int32_t>(), static_cast<int>(c.lengths.size()), max_len,
                            c.heads, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), kernel,
                            d_out.as<bf16>(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> raw(tokens * hidden);
  EXPECT_EQ(cudaMemcpy(raw.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) out[i] = FromBf16(raw[i]);
  return out;
}

class CudaAttentionTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA GPU visible to this process";
  }
};

TEST_P(CudaAttentionTest, BothKernelsMatchTheFloat64Reference) {
  const Case& c = GetParam();
  std::vector<int> offsets = {0};
  for (int len : c.lengths) offsets.push_back(offsets.back() + len);
  std::mt19937 rng(c.head_dim * 1000 + c.lengths.size());
  // Scores of a few units, so the softmax is neither flat nor one-hot.
  std::normal_distribution<float> qk(0.0f, 1.0f);
  std::uniform_real_distribution<float> v(-1.0f, 1.0f);
  const size_t hidden = size_t(c.heads) * c.head_dim;
  std::vector<uint16_t> qkv(size_t(offsets.back()) * 3 * hidden);
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = ToBf16((i / hidden) % 3 == 2 ? v(rng) : qk(rng));

  const std::vector<double> want = Reference(qkv, c, offsets);
  const std::vector<double> regs = RunKernel(AttentionKernel::kRegisters, qkv, c, offsets);
  const std::vector<double> staged = RunKernel(AttentionKernel::kStaged, qkv, c, offsets);
  double worst_regs = 0, worst_staged = 0, worst_apart = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst_regs = std::max(worst_regs, std::isnan(regs[i]) ? INFINITY : std::abs(regs[i] - want[i]));
    worst_staged = std::max(worst_staged, std::isnan(staged[i]) ? INFINITY : std::abs(staged[i] - want[i]));
    worst_apart = std::max(worst_apart, std::abs(regs[i] - staged[i]));
  }
  std::printf("head_dim %d, %zu sequences: max |err| registers %.3g, staged %.3g, apart %.3g\n", c.head_dim,
              c.lengths.size(), worst_regs, worst_staged, worst_apart);
  EXPECT_LE(worst_regs, 2e-2);
  EXPECT_LE(worst_staged, 2e-2);
  EXPECT_LE(worst_apart, 2e-2);
}

INSTANTIATE_TEST_SUITE_P(
    HeadSizesAndLengths, CudaAttentionTest,
    ::testing::Values(Case{4, 16, {1, 2, 15, 63, 64, 65, 100, 128}}, Case{3, 32, {129, 7, 200}},
                      Case{2, 64, {1, 64, 191, 256, 33}}, Case{12, 64, {512, 3}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return "head_dim" + std::to_string(info.param.head_dim) + "_case" + std::to_string(info.index);
    });

}  // namespace
}  // namespace shoal::native::cuda
