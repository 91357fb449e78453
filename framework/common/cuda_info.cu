// Compiled by nvcc (UNIF_WITH_CUDA builds only): the CUDA runtime's version for `unif --version`.
// Needs no GPU or driver.
#include <cuda_runtime_api.h>

#include "framework/common/build_info.h"

namespace unif {

int cuda_runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

}  // namespace unif
