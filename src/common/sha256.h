// SHA-256 (FIPS 180-4) over bytes that arrive in pieces: model files as
// they are read or fetched, so a digest never needs the whole file in memory.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

namespace shoal {

class Sha256 {
 public:
  using Digest = std::array<unsigned char, 32>;

  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // The digest of everything given; the hasher starts over afterwards.
  Digest Finish();
  std::string FinishHex();  // lowercase, 64 digits

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace shoal
