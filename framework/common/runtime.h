// Process set-up shared by every unif binary (the CLI, tests, benchmarks): the thread policy.
//
// Torch's OpenMP threads spin while waiting and fight OpenBLAS's own threads; on 2 cores that made a
// BERT step 2x slower. libgomp reads OMP_WAIT_POLICY once, when it is loaded (before main), so
// init_runtime re-executes the binary once with OMP_WAIT_POLICY=PASSIVE when the user has not set
// it, then sets Torch's intra-op threads (UNIF_NUM_THREADS, else every core this process may use).
//
// The BLAS's kernels: OpenBLAS (Debian's LibTorch) picks its kernel set from the CPU model, read
// when it is loaded, and Debian 12's 0.3.21 does not know newer CPUs (Intel Emerald Rapids, model
// 207): it falls back to "Prescott", its generic SSE3 kernels, 6x slower on a float32 GEMM than its
// AVX-512 ones on the same core (25 against 158 GFLOP/s). init_runtime then sets
// OPENBLAS_CORETYPE for the CPU's instruction set (blas_core_override) in the same re-execution.
// The user's own OPENBLAS_CORETYPE wins.
#pragma once

#include <string>

namespace unif {

/// Call first thing in main(). May re-execute the process (same argv) once.
void init_runtime(int argc, char** argv);

/// OpenBLAS's kernel set as it reports it ("SkylakeX", "Haswell", "Zen", "Prescott", ...), or ""
/// when the BLAS is not OpenBLAS (the PyPI wheel's MKL).
std::string blas_core();

/// What this CPU can run, as far as the BLAS's kernel choice and bfloat16 go.
struct CpuFeatures {
  bool avx2 = false;    // AVX2 and FMA
  bool avx512 = false;  // AVX-512 F, BW, VL, DQ and CD (SkylakeX's kernels)
  /// bfloat16 instructions a GEMM can use (/proc/cpuinfo's avx512_bf16 or amx_bf16): without them
  /// neither LibTorch here has a fast bfloat16 GEMM, and training.precision bf16 on a CPU replica gets
  /// a warning. Decided from the CPU alone, so every run of one machine decides alike whatever its load.
  bool bf16 = false;
};
CpuFeatures cpu_features();

/// The OPENBLAS_CORETYPE init_runtime sets when OpenBLAS `detected` its generic fallback
/// ("Prescott") on a CPU that runs better kernels: "SkylakeX" (AVX-512), "Haswell" (AVX2 + FMA);
/// "" when the detected set stands.
std::string blas_core_override(const std::string& detected, const CpuFeatures& cpu);

/// Number of cores this process may use (sched affinity), at least 1.
int available_cores();

/// Threads of the BLAS's own pool (OpenBLAS, found at run time with dlsym: Debian's LibTorch calls
/// whichever libblas.so.3 is installed). Returns false, changing nothing, when the BLAS has no such
/// setting. OpenBLAS's pool serves one caller at a time, so concurrent replicas that each start a
/// multi-threaded GEMM queue behind each other: the data-parallel engine sets 1 (each replica's
/// GEMMs then run on its own thread, all at once) unless OPENBLAS_NUM_THREADS is set.
bool set_blas_threads(int threads);
/// The BLAS pool's thread count, or 0 when the BLAS does not say.
int blas_threads();

/// The BLAS pool at `threads` for this object's lifetime, then back to the count it had. Changes
/// nothing when the user set OPENBLAS_NUM_THREADS (theirs wins) or the BLAS has no such setting.
/// The data-parallel engine holds one at 1 while it lives (CPU replicas); the trainer's evaluation,
/// which runs alone on the calling thread, holds one at every core.
class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads);
  ~ScopedBlasThreads();
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int previous_ = 0;  // 0: nothing to restore
};

}  // namespace unif
