#include "framework/common/runtime.h"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

namespace unif {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

bool set_blas_threads(int threads) {
  using SetFn = void (*)(int);
  auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr || threads < 1) return false;
  set(threads);
  return true;
}

int blas_threads() {
  using GetFn = int (*)();
  auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get == nullptr ? 0 : get();
}

ScopedBlasThreads::ScopedBlasThreads(int threads) {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
  const int before = blas_threads();
  if (before > 0 && set_blas_threads(threads)) previous_ = before;
}

ScopedBlasThreads::~ScopedBlasThreads() {
  if (previous_ > 0) set_blas_threads(previous_);
}

std::string blas_core() {
  using NameFn = char* (*)();
  auto get = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (get == nullptr) return "";
  const char* name = get();
  return name == nullptr ? "" : name;
}

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512cd");
#endif
  static const bool bf16 = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("flags", 0) != 0) continue;
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;)
        if (w == "avx512_bf16" || w == "amx_bf16") return true;
      return false;  // the first processor's flags speak for all
    }
    return false;
  }();
  f.bf16 = bf16;
  return f;
}

std::string blas_core_override(const std::string& detected, const CpuFeatures& cpu) {
  // OpenBLAS names a CPU it does not know "Prescott" (its generic SSE3 kernels); every CPU with
  // AVX2 is far past that. SkylakeX and Haswell are the kernel sets for AVX-512 and AVX2 + FMA.
  if (detected != "Prescott") return "";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2) return "Haswell";
  return "";
}

void init_runtime(int argc, char** argv) {
  const bool set_policy = std::getenv("OMP_WAIT_POLICY") == nullptr;
  const std::string core =
      std::getenv("OPENBLAS_CORETYPE") == nullptr ? blas_core_override(blas_core(), cpu_features()) : "";
  if ((set_policy || !core.empty()) && std::getenv("UNIF_NO_REEXEC") == nullptr) {
    if (set_policy) setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    if (!core.empty()) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    setenv("UNIF_NO_REEXEC", "1", 1);  // never loop, even if exec'ing fails to keep the variable
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    // exec failed: carry on with the default (spinning) policy.
  }
  int threads = available_cores();
  if (const char* env = std::getenv("UNIF_NUM_THREADS")) {
    int v = std::atoi(env);
    if (v > 0) threads = v;
  }
  at::set_num_threads(threads);
}

}  // namespace unif
