# `cmake --install`: public headers, the static libraries, gmemprof, and a CMake package
# (gmemConfig.cmake, gmemConfigVersion.cmake, gmemTargets.cmake) exporting gmem::alloc,
# gmem::profiler (and gmem::profiler_core and gmem::model, which gmem::profiler links).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Public headers only. alloc/include/gmem/detail/ goes too: the public types hold those by value.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/alloc/include/gmem
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiler/include/gmem
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiler/model/include/gmem
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")

install(TARGETS gmem_alloc gmem_model gmem_profiler_core gmem_profiler EXPORT gmemTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS gmemprof RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(GMEM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gmem)
install(EXPORT gmemTargets NAMESPACE gmem:: DESTINATION ${GMEM_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gmemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gmemConfig.cmake INSTALL_DESTINATION ${GMEM_INSTALL_CMAKEDIR})
# 0.x: a minor version bump may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gmemConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gmemConfig.cmake ${PROJECT_BINARY_DIR}/gmemConfigVersion.cmake
        DESTINATION ${GMEM_INSTALL_CMAKEDIR})
