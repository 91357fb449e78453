#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <ATen/Context.h>

#include "framework/common/runtime.h"

TEST_CASE("init_runtime makes OpenMP threads wait passively", "[unit][runtime]") {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  REQUIRE(policy != nullptr);
  // Either the user's own choice or ours; ours is PASSIVE.
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
