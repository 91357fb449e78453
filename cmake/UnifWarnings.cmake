# One place for compiler warnings. UNIF_WERROR=ON (scripts/setup.sh sets it for Debian's toolchain,
# which CI builds) makes every warning in unif's own code an error.
option(UNIF_WERROR "Treat warnings in unif's own code as errors" OFF)
function(unif_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter>")
    if(UNIF_WERROR)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Werror>")
    endif()
  endif()
endfunction()
