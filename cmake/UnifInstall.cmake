# `cmake --install build` installs the libraries, headers and the `unif` binary and exports
# the CMake package `unif` (targets unif::models, unif::adversarial, unif::framework).
include(CMakePackageConfigHelpers)

set(UNIF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/unif)
set(UNIF_EXPORTED_TARGETS unif_models unif_adversarial unif_framework unif_common unif_text unif_checkpoint
    unif_metrics unif_config unif_data unif_parallel unif_gradient_engine unif_engines unif_train unif_utf8proc)
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
foreach(dir models adversarial framework)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/unif/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT unifTargets NAMESPACE unif:: DESTINATION ${UNIF_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/unifConfig.cmake.in
    ${PROJECT_BINARY_DIR}/unifConfig.cmake INSTALL_DESTINATION ${UNIF_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unifConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unifConfig.cmake ${PROJECT_BINARY_DIR}/unifConfigVersion.cmake
        DESTINATION ${UNIF_CMAKE_DIR})
