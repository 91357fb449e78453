#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <ATen/Context.h>

#include "framework/common/runtime.h"

TEST_CASE("init_runtime makes OpenMP threads wait passively", "[unit][runtime]") {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  REQUIRE(policy != nullptr);
  // Either the user's own choice or ours; ours is PASSIVE, set by re-executing the process once.
  if (std::getenv("UNIF_EXPECT_REEXEC") != nullptr) REQUIRE(std::getenv("UNIF_NO_REEXEC") != nullptr);
  if (std::getenv("UNIF_NO_REEXEC") != nullptr) REQUIRE(std::string(policy) == "PASSIVE");
  REQUIRE(unif::available_cores() >= 1);
}

TEST_CASE("the BLAS pool's threads can be set (OpenBLAS, as Debian's LibTorch uses)", "[unit][runtime]") {
  if (at::hasMKL()) {
    // The PyPI wheel's LibTorch: MKL, no OpenBLAS. MKL's threads follow OpenMP's per-thread count
    // (at::set_num_threads, omp_set_num_threads), so there is no pool to set: nothing is found,
    // nothing changes, nothing crashes.
    CHECK(unif::blas_threads() == 0);
    CHECK_FALSE(unif::set_blas_threads(1));
    CHECK(unif::blas_threads() == 0);
    return;
  }
  const int before = unif::blas_threads();
  REQUIRE(before >= 1);  // OpenBLAS is linked (scripts/setup.sh installs libopenblas0-pthread)
  REQUIRE(unif::set_blas_threads(1));
  CHECK(unif::blas_threads() == 1);
  REQUIRE(unif::set_blas_threads(before));
  CHECK(unif::blas_threads() == before);
  CHECK_FALSE(unif::set_blas_threads(0));
}

TEST_CASE("OpenBLAS's generic fallback is replaced by the kernels the CPU runs, and only that", "[unit][runtime]") {
  unif::CpuFeatures avx512{true, true}, avx2{true, false}, old{false, false};
  CHECK(unif::blas_core_override("Prescott", avx512) == "SkylakeX");
  CHECK(unif::blas_core_override("Prescott", avx2) == "Haswell");
  CHECK(unif::blas_core_override("Prescott", old).empty());  // nothing better to run
  for (const char* known : {"SkylakeX", "Cooperlake", "Haswell", "Zen", "Sandybridge", ""})
    CHECK(unif::blas_core_override(known, avx512).empty());  // OpenBLAS knew the CPU (or is not there)
}

TEST_CASE("this process's OpenBLAS runs kernels for its CPU, not the generic fallback", "[unit][runtime]") {
  const std::string core = unif::blas_core();
  if (core.empty()) {
    CHECK(at::hasMKL());  // the PyPI wheel: MKL chooses its own kernels
    return;
  }
  INFO("OpenBLAS core: " << core << ", OPENBLAS_CORETYPE: "
                         << (std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)"));
  const auto cpu = unif::cpu_features();
  if (std::getenv("UNIF_NO_REEXEC") != nullptr && (cpu.avx2 || cpu.avx512)) CHECK(core != "Prescott");
}
