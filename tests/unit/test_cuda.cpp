// CUDA smoke test, built only when LibTorch has CUDA (UNIF_WITH_CUDA, the pypi toolchain). Without
// a GPU each case prints UNIF_SKIPPED_NO_GPU and ctest reports it as skipped
// (SKIP_REGULAR_EXPRESSION in tests/unit/CMakeLists.txt); with one, CUDA results must equal the CPU's.
#include <catch2/catch.hpp>

#include <iostream>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "framework/common/build_info.h"

namespace {

bool have_gpu() {
  if (torch::cuda::is_available()) return true;
  std::cout << "UNIF_SKIPPED_NO_GPU\n";
  return false;
}

}  // namespace

TEST_CASE("CUDA matmul, softmax and layer norm equal the CPU's", "[unit][cuda]") {
  if (!have_gpu()) return;
  torch::manual_seed(0);
  const auto a = torch::randn({64, 128});
  const auto b = torch::randn({128, 32});
  const auto w = torch::randn({32});
  auto on = [&](torch::Device d) {
    auto y = torch::matmul(a.to(d), b.to(d));
    y = torch::layer_norm(torch::softmax(y, -1), {32}, w.to(d), {}, 1e-12);
    return y.cpu();
  };
  CHECK(torch::allclose(on(torch::kCUDA), on(torch::kCPU), 1e-4, 1e-5));
}

TEST_CASE("cuDNN is available and the CUDA runtime matches LibTorch's", "[unit][cuda]") {
  if (!have_gpu()) return;
  CHECK(torch::cuda::cudnn_is_available());
  CHECK(unif::cuda_runtime_version() > 0);
  CHECK(torch::cuda::device_count() >= 1);
}
