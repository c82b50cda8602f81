#include "common/hardware.h"

#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace shoal {
namespace {

std::set<std::string_view> Words(std::string_view s) {
  std::set<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) words.insert(s.substr(start, i - start));
  }
  return words;
}

std::string Trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// Cores this process may run on: its affinity mask, capped by a cgroup v2
// CPU quota (containers often get a quota, not a mask).
int AvailableCores() {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  std::ifstream max("/sys/fs/cgroup/cpu.max");
  std::string quota, period;
  if (max >> quota >> period && quota != "max") {
    const double q = std::atof(quota.c_str()), p = std::atof(period.c_str());
    if (q > 0 && p > 0) cores = std::min(cores, std::max(1, static_cast<int>(std::ceil(q / p))));
  }
  return cores;
}

HardwareInfo Detect() {
  HardwareInfo h;
  struct utsname u {};
  h.arch = uname(&u) == 0 ? u.machine : "unknown";
  std::string flags;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, colon));
    const std::string value = Trim(line.substr(colon + 1));
    if (h.cpu_model.empty() && (key == "model name" || key == "Model" || key == "cpu model"))
      h.cpu_model = value;
    // x86 says "flags", arm64 "Features".
    if (flags.empty() && (key == "flags" || key == "Features")) flags = value;
  }
  if (h.cpu_model.empty()) h.cpu_model = h.arch + " CPU";
  h.isa = IsaLevel(h.arch, flags);
  h.cores = AvailableCores();
  struct sysinfo si {};
  if (sysinfo(&si) == 0) h.memory_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  h.hardware_class = CpuHardwareClass(h.arch, h.isa, h.cores);
  return h;
}

}  // namespace

std::string HardwareInfo::Description() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s, %d core%s, %.0f GiB", cpu_model.c_str(), cores,
                cores == 1 ? "" : "s", memory_bytes / double(uint64_t{1} << 30));
  return buf;
}

const HardwareInfo& ThisHardware() {
  static const HardwareInfo info = Detect();
  return info;
}

const std::string& CurrentHardwareClass() {
  static const std::string key = [] {
    const char* env = std::getenv("SHOAL_HARDWARE_CLASS");
    if (env != nullptr && IsHardwareClass(env)) return std::string(env);
    return ThisHardware().hardware_class;
  }();
  return key;
}

std::string IsaLevel(std::string_view arch, std::string_view cpu_flags) {
  const auto flags = Words(cpu_flags);
  const auto has = [&](std::string_view f) { return flags.count(f) > 0; };
  if (arch == "x86_64") {
    // What the native kernels dispatch on (kernels/cpu/isa.h) and oneDNN's
    // bf16 paths: AMX tiles, then AVX-512 with bf16 dot products.
    if (has("amx_bf16") && has("amx_tile")) return "amx";
    if (has("avx512_bf16") && has("avx512f")) return "avx512bf16";
    if (has("avx512f")) return "avx512";
    if (has("avx2") && has("fma")) return "avx2";
    return "base";
  }
  if (arch == "aarch64") {
    if (has("sve")) return "sve";
    if (has("asimd")) return "neon";
  }
  return "base";
}

std::string CpuHardwareClass(std::string_view arch, std::string_view isa, int cores) {
  std::string a(arch);
  for (char& c : a)
    c = (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? std::tolower(c) : '_';
  return "cpu-" + a + "-" + std::string(isa) + "-" + std::to_string(std::max(1, cores)) + "c";
}

std::string CudaHardwareClass(int major, int minor) {
  return "cuda-sm" + std::to_string(major) + std::to_string(minor);
}

bool IsHardwareClass(std::string_view key) {
  if (key.empty() || key.size() > 64) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

}  // namespace shoal
