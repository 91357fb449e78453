#include "framework/common/build_info.h"

#include <exception>
#include <sstream>

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#ifdef UNIF_WITH_NCCL
// The NCCL process group's header (it brings getNcclVersion): compiled here so that it stays
// usable; USE_C10D_NCCL is set for this file in framework/common/CMakeLists.txt.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace unif {

#ifdef UNIF_WITH_CUDA
namespace {

// CUDA's encoding: 13000 -> "13.0" (major * 1000 + minor * 10).
std::string cuda_version(long v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace
#endif

std::string build_info() {
  std::string cuda = "none", cudnn = "none", nccl = "none";
#ifdef UNIF_WITH_CUDA
  try {
    const auto& hooks = at::detail::getCUDAHooks();
    cuda = cuda_version(hooks.versionCUDART()) + " (runtime " + cuda_version(cuda_runtime_version()) + ")";
    const long d = hooks.versionCuDNN();  // major * 10000 + minor * 100 + patch (cuDNN 9)
    cudnn = std::to_string(d / 10000) + "." + std::to_string(d % 10000 / 100) + "." + std::to_string(d % 100);
  } catch (const std::exception&) {
    // A LibTorch with CUDA but without cuDNN (or its CUDA hooks not loaded): leave "none".
  }
#endif
#ifdef UNIF_WITH_NCCL
  nccl = c10d::getNcclVersion();
#endif
  std::ostringstream out;
  out << "LibTorch " << TORCH_VERSION << "\n"
      << "CUDA " << cuda << ", cuDNN " << cudnn << ", NCCL " << nccl << "\n"
      << "GPUs: " << static_cast<int>(torch::cuda::device_count()) << "\n";  // a DeviceIndex: int8_t in 2.x
  return out.str();
}

}  // namespace unif
