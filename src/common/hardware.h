// Hardware classes: a short, stable key for "this kind of machine", which
// tuned model profiles are keyed by (`tuned:` in a profile, model_spec.h),
// and a human description of the machine for the evidence beside a tuned
// entry.
//
//   cpu-<arch>-<isa>-<cores>c     e.g. cpu-x86_64-avx512bf16-2c
//
// <isa> is the best vector ISA level the native kernels care about, read
// from /proc/cpuinfo's flags: amx (amx_bf16), avx512bf16 (avx512_bf16),
// avx512 (avx512f), avx2, else base. <cores> is the cores this process may
// use (its CPU affinity, capped by a cgroup CPU quota), since a profile
// tuned on 2 cores is not the right one for 32. Two machines with the same
// key should take the same tuned parameters; the key leaves out what does
// not change them (CPU model, memory, clock).
//
// Devices: a CUDA build will key models placed on a GPU by the device's
// compute capability, `cuda-sm<major><minor>` (CudaHardwareClass); the CPU
// class is what every model gets today.
//
// SHOAL_HARDWARE_CLASS, when set, replaces the detected key (to apply a
// profile tuned on an identical machine with another name, or in tests).
//
// Threading: detection runs once (a function-local static); every function
// is safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shoal {

struct HardwareInfo {
  std::string hardware_class;  // the key (above)
  std::string arch;            // uname machine: x86_64, aarch64, ...
  std::string isa;             // amx, avx512bf16, avx512, avx2, base
  int cores = 1;               // available to this process
  std::string cpu_model;       // "AMD EPYC 9654 96-Core Processor"
  uint64_t memory_bytes = 0;   // physical memory
  // "AMD EPYC ..., 2 cores, 24 GiB" for evidence.
  std::string Description() const;
};

// This machine, detected once.
const HardwareInfo& ThisHardware();

// ThisHardware().hardware_class, or SHOAL_HARDWARE_CLASS when set.
const std::string& CurrentHardwareClass();

// The pieces, pure so they are tested on sample input.
// The ISA level from a cpuinfo `flags` line's value (space-separated).
std::string IsaLevel(std::string_view arch, std::string_view cpu_flags);
std::string CpuHardwareClass(std::string_view arch, std::string_view isa, int cores);
// The hook for GPU devices: cuda-sm90 for compute capability 9.0.
std::string CudaHardwareClass(int major, int minor);
// Whether `key` looks like a hardware class ([a-z0-9_-], 1..64 chars): what
// a `tuned:` entry may be named.
bool IsHardwareClass(std::string_view key);

}  // namespace shoal
