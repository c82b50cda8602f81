#include "common/ids.h"

#include <unistd.h>

#include <cctype>
#include <random>

namespace shoal {

std::string RandomToken(size_t n) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string s(n, 'a');
  for (auto& c : s) c = kAlphabet[pick(rng)];
  return s;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "host";
  std::string out;
  for (const char* p = buf; *p; ++p) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  }
  return out.empty() ? "host" : out;
}

}  // namespace shoal
