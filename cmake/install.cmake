# `cmake --install`: the library, its public headers, a CMake package
# (find_package(hkv CONFIG) -> hkv::hkv), a pkg-config file, the hkv tool
# and its data files under share/hkv (docs/design.md, "Install").
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ${HKV_LAYER_TARGETS} EXPORT hkvTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/hkv DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/generated/include/hkv/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hkv)

set(hkv_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hkv)
install(EXPORT hkvTargets NAMESPACE hkv:: DESTINATION ${hkv_cmake_dir})
configure_package_config_file(cmake/hkvConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hkvConfig.cmake INSTALL_DESTINATION ${hkv_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hkvConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hkvConfig.cmake
              ${PROJECT_BINARY_DIR}/hkvConfigVersion.cmake
        DESTINATION ${hkv_cmake_dir})

# From LIBDIR/pkgconfig up to the prefix ("lib/pkgconfig" -> "../..").
string(REGEX REPLACE "[^/]+" ".." HKV_PC_TO_PREFIX
       "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(cmake/hkv.pc.in ${PROJECT_BINARY_DIR}/hkv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hkv.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The data the tool reads at run time (traces, calibration figures) and the
# presets it has compiled in, with their sources and licences.
install(DIRECTORY data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hkv)
