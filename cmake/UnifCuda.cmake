# CUDA and NCCL, when the LibTorch found has them (the PyPI wheel of UNIF_TORCH=pypi: yes;
# Debian's libtorch-dev: no). Include after find_package(Torch).
#
# Sets, and defines for every translation unit (so code can #if on them):
#   UNIF_WITH_CUDA  LibTorch has CUDA; the CUDA language is enabled, CUDA::cudart and the toolkit's
#                   headers are usable (Torch's package already found the toolkit: CUDAToolkit_ROOT,
#                   CMAKE_CUDA_COMPILER and TORCH_CUDA_ARCH_LIST come from scripts/setup.sh)
#   UNIF_WITH_NCCL  LibTorch has c10d's ProcessGroupNCCL and nccl.h is found (UNIF_NCCL_INCLUDE_DIR);
#                   a translation unit that includes ProcessGroupNCCL.hpp also needs USE_C10D_NCCL
#                   (see unif_use_nccl)
set(UNIF_WITH_CUDA OFF)
set(UNIF_WITH_NCCL OFF)
if(CAFFE2_USE_CUDA)
  set(UNIF_WITH_CUDA ON)
  enable_language(CUDA)
  # nvcc's targets: TORCH_CUDA_ARCH_LIST's (9.0 -> 90), else the compiler's default.
  if(TORCH_CUDA_ARCH_LIST)
    string(REPLACE "." "" CMAKE_CUDA_ARCHITECTURES "${TORCH_CUDA_ARCH_LIST}")
  endif()
  find_package(CUDAToolkit REQUIRED)
  add_compile_definitions(UNIF_WITH_CUDA=1)
  # NCCL's header: the copy that ships with the wheel's libnccl first, else the toolkit's.
  get_filename_component(_unif_site_packages "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  find_path(UNIF_NCCL_INCLUDE_DIR nccl.h
      HINTS "${_unif_site_packages}/nvidia/nccl/include" ${CUDAToolkit_INCLUDE_DIRS})
  if(UNIF_NCCL_INCLUDE_DIR AND EXISTS "${TORCH_INSTALL_PREFIX}/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
    set(UNIF_WITH_NCCL ON)
    add_compile_definitions(UNIF_WITH_NCCL=1)
  endif()
endif()
message(STATUS "unif: LibTorch ${Torch_VERSION}, CUDA ${UNIF_WITH_CUDA}, NCCL ${UNIF_WITH_NCCL}")

# unif_use_nccl(<target> <source>...): those sources may include c10d's ProcessGroupNCCL.hpp.
function(unif_use_nccl target)
  target_include_directories(${target} PRIVATE ${UNIF_NCCL_INCLUDE_DIR})
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_DEFINITIONS USE_C10D_NCCL SKIP_PRECOMPILE_HEADERS ON)
endfunction()
