# `cmake --install`: the library, its public headers, a CMake package
# (find_package(hkv CONFIG) -> hkv::hkv; COMPONENTS cache -> hkv::cache
# alone, below), pkg-config files (hkv, hkv-cache), the hkv tool
# and its data files under share/hkv (docs/design.md, "Install").
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The package's components (find_package(hkv COMPONENTS ...), none: all),
# each an export set of layers; hkvConfig.cmake finds what each needs.
#   cache     hkv::core, hkv::groups, hkv::cache: keys, the pool, the group
#             kinds, the cache manager, the group-list parser
#   geometry  hkv::geometry: model facts, the planner
#   events    hkv::events, hkv::index: the KV event wire, the cluster index
#   tiers     hkv::tiers: offload tiers (host, file, Redis)
#   sim       hkv::traces, hkv::engine, hkv::calibration, hkv::experiments
#             and hkv::hkv (every layer): the simulator and its experiments
foreach(component IN ITEMS "Cache;hkv_core;hkv_groups;hkv_cache"
                           "Geometry;hkv_geometry"
                           "Events;hkv_events;hkv_index"
                           "Tiers;hkv_tiers"
                           "Sim;hkv_traces;hkv_engine;hkv_calibration;hkv_experiments;hkv")
  list(POP_FRONT component name)
  install(TARGETS ${component} EXPORT hkv${name}Targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endforeach()
install(DIRECTORY include/hkv DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/generated/include/hkv/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hkv)

set(hkv_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hkv)
foreach(name IN ITEMS Cache Geometry Events Tiers Sim)
  install(EXPORT hkv${name}Targets NAMESPACE hkv::
          DESTINATION ${hkv_cmake_dir})
endforeach()
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
configure_file(cmake/hkv-cache.pc.in ${PROJECT_BINARY_DIR}/hkv-cache.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hkv.pc ${PROJECT_BINARY_DIR}/hkv-cache.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The data the tool reads at run time (traces, calibration figures) and the
# presets it has compiled in, with their sources and licences.
install(DIRECTORY data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hkv)
