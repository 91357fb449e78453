// What this build of unif was compiled against, for `unif --version` (SPEC §7): the LibTorch
// version, the CUDA / cuDNN / NCCL versions compiled in ("none" without them) and the GPUs seen.
#pragma once
#include <string>

namespace unif {

/// Lines like
///   LibTorch 2.11.0
///   CUDA 13.0 (runtime 13.0), cuDNN 9.19.0, NCCL 2.28.9
///   GPUs: 0
/// each ending in '\n'. Never throws; asking for the GPUs starts no CUDA context.
std::string build_info();

#ifdef UNIF_WITH_CUDA
/// The CUDA runtime's version (cudaRuntimeGetVersion, e.g. 13000), from code nvcc compiled
/// (cuda_info.cu); 0 when it cannot say.
int cuda_runtime_version();
#endif

}  // namespace unif
