# Installs kjit as a CMake package: find_package(kjit) gives kjit::kjit (the core, libkjit),
# kjit::tools (libkjit_tools, which links the core) and the kjit tool.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

install(TARGETS kjit kjit_tools EXPORT kjitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # the include dir: kjit's INSTALL_INTERFACE, once
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kjit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kernels_src/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kjit/kernels_src)
if(TARGET kjit_cli)
  install(TARGETS kjit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT kjitTargets NAMESPACE kjit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kjit)
# The config names the NVRTC libkjit opens and the toolkit of the build, in its comment only.
set(KJIT_NVRTC_MAJOR ${CUDAToolkit_VERSION_MAJOR})
set(KJIT_CUDA_ROOT_AT_BUILD ${CUDAToolkit_LIBRARY_ROOT})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kjitConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kjit)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kjitConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kjitConfig.cmake ${PROJECT_BINARY_DIR}/kjitConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kjit)

# kjit_installable: every target `cmake --install` copies from the build, so that the README's
# order works: scripts/quickstart.sh builds it (and the example), then `cmake --install build`
# finds each file (ctest build/quickstart_then_install reads the build graph to check that).
add_custom_target(kjit_installable)
add_dependencies(kjit_installable kjit kjit_tools)
foreach(_kjit_target IN ITEMS kjit_cli kjit_inject)
  if(TARGET ${_kjit_target})
    add_dependencies(kjit_installable ${_kjit_target})
  endif()
endforeach()
