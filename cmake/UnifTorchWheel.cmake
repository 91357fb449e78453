# What building against a Python wheel's LibTorch (UNIF_TORCH=pypi) needs beyond Debian's. Include
# after find_package(Torch) and find_package(spdlog). Sets UNIF_TORCH_WHEEL.
set(UNIF_TORCH_WHEEL OFF)
if(EXISTS "${TORCH_INSTALL_PREFIX}/__init__.py")
  set(UNIF_TORCH_WHEEL ON)
endif()

# unif_use_spdlog(<target>): links spdlog. The wheel's include directory carries its own fmt (12),
# which Torch's targets put on every include path ahead of /usr/include; Debian's spdlog is built
# on Debian's fmt (9), so its users get a directory holding only Debian's fmt/, searched first.
set(UNIF_FMT_SHIM ${PROJECT_BINARY_DIR}/fmt-shim)
if(UNIF_TORCH_WHEEL AND EXISTS "${TORCH_INSTALL_PREFIX}/include/fmt")
  get_target_property(_unif_fmt_include_dir fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  file(MAKE_DIRECTORY ${UNIF_FMT_SHIM})
  file(CREATE_LINK ${_unif_fmt_include_dir}/fmt ${UNIF_FMT_SHIM}/fmt SYMBOLIC)
endif()
function(unif_use_spdlog target)
  target_link_libraries(${target} PUBLIC spdlog::spdlog)
  if(EXISTS ${UNIF_FMT_SHIM}/fmt)
    target_include_directories(${target} BEFORE PRIVATE $<BUILD_INTERFACE:${UNIF_FMT_SHIM}>)
  endif()
endfunction()

# The wheel's libtorch.so and libtorch_cpu.so export their own copies of std::filesystem (from the
# toolchain that built them), and libtorch.so's std::filesystem::remove_all jumps to address 0.
# Torch comes before libstdc++ on the link line, so the dynamic linker would bind every
# std::filesystem call of ours to those copies; UNIF_WHEEL_LINK_OPTIONS makes libstdc++ the first
# library a binary needs, so the system's libstdc++ answers first (framework/common links it into
# every unif binary, and exports it to find_package(unif) users).
set(UNIF_WHEEL_LINK_OPTIONS)
if(UNIF_TORCH_WHEEL AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(UNIF_WHEEL_LINK_OPTIONS "-Wl,--push-state,--no-as-needed,-lstdc++,--pop-state")
endif()
