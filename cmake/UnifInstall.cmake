# `cmake --install build` installs the libraries, headers and the `unif` binary and exports
# the CMake package `unif` (targets unif::models, unif::adversarial, unif::framework).
include(CMakePackageConfigHelpers)

set(UNIF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/unif)
set(UNIF_EXPORTED_TARGETS unif_models unif_adversarial unif_framework unif_common unif_text unif_checkpoint
    unif_metrics unif_config unif_data unif_parallel unif_gradient_engine unif_engines unif_model unif_train unif_inference unif_utf8proc)
# Exported as unif::<name without the unif_ prefix>: unif::framework, unif::models, ...
# Each carries cxx_std_17 in its usage requirements, so a consumer gets C++17 whatever its own
# CMAKE_CXX_STANDARD says (tests/install/test_find_package.sh builds one set to C++14).
foreach(target ${UNIF_EXPORTED_TARGETS})
  string(REGEX REPLACE "^unif_" "" export_name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  get_target_property(target_type ${target} TYPE)
  if(target_type STREQUAL "INTERFACE_LIBRARY")
    target_compile_features(${target} INTERFACE cxx_std_17)
  else()
    target_compile_features(${target} PUBLIC cxx_std_17)
  endif()
endforeach()
install(TARGETS ${UNIF_EXPORTED_TARGETS}
        EXPORT unifTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS unif RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Headers: the public API is include/unif/unif.h and what it includes, transitively (the project's
# own `#include "dir/file.h"` lines, read at configure time); internal headers are not installed.
# tests/install/test_find_package.sh builds a consumer that includes <unif/unif.h> only.
function(unif_header_closure out)
  set(pending ${ARGN})
  set(seen "")
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${header})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" included "${line}")
      if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${included})
        message(FATAL_ERROR "${header} includes \"${included}\", not a path from the source root")
      endif()
      list(APPEND pending ${included})
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()
# The umbrella's list of includes decides the closure: a change to it reconfigures.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/unif/unif.h)
file(STRINGS ${PROJECT_SOURCE_DIR}/include/unif/unif.h umbrella_lines REGEX "^#include \"")
set(unif_public_roots "")
foreach(line ${umbrella_lines})
  string(REGEX REPLACE "^#include \"([^\"]+)\".*$" "\\1" included "${line}")
  list(APPEND unif_public_roots ${included})
endforeach()
unif_header_closure(unif_public_headers ${unif_public_roots})
foreach(header ${unif_public_headers})
  get_filename_component(header_dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/unif/${header_dir})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/unif/unif.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/unif)
list(LENGTH unif_public_headers unif_public_count)
message(STATUS "unif: ${unif_public_count} public headers (include/unif/unif.h and what it includes)")
install(EXPORT unifTargets NAMESPACE unif:: DESTINATION ${UNIF_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/unifConfig.cmake.in
    ${PROJECT_BINARY_DIR}/unifConfig.cmake INSTALL_DESTINATION ${UNIF_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unifConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unifConfig.cmake ${PROJECT_BINARY_DIR}/unifConfigVersion.cmake
        DESTINATION ${UNIF_CMAKE_DIR})
