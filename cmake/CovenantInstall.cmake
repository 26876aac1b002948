# Installation: library, headers, CMake package (covenant::covenant),
# pkg-config file and, when present, the command-line tool.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(COVENANT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/covenant")

install(TARGETS covenant
  EXPORT covenantTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.ipp")
# The generated covenant/build_config.hpp (the defaults the library was built with) and
# covenant/export.hpp (COVENANT_API).
install(FILES
  "${COVENANT_GENERATED_INCLUDE_DIR}/covenant/build_config.hpp"
  "${COVENANT_GENERATED_INCLUDE_DIR}/covenant/export.hpp"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/covenant)

# Command-line tool: installed when src/cli/main.cpp exists (see CMakeLists.txt).
if(TARGET covenant-cli)
  install(TARGETS covenant-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT covenantTargets
  NAMESPACE covenant::
  DESTINATION ${COVENANT_CMAKE_DIR})

# The GoogleTest helpers: their own export set, loaded by the `gtest` component
# (find_package(covenant CONFIG REQUIRED COMPONENTS gtest)), so that applications without
# GoogleTest never need it.
if(TARGET covenant_gtest)
  install(TARGETS covenant_gtest EXPORT covenantGtestTargets)
  install(EXPORT covenantGtestTargets
    NAMESPACE covenant::
    DESTINATION ${COVENANT_CMAKE_DIR})
endif()

get_target_property(COVENANT_LIBRARY_TYPE covenant TYPE)
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/covenantConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/covenantConfig.cmake"
  INSTALL_DESTINATION ${COVENANT_CMAKE_DIR})
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/covenantConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/covenantConfig.cmake"
  "${PROJECT_BINARY_DIR}/covenantConfigVersion.cmake"
  DESTINATION ${COVENANT_CMAKE_DIR})

# pkg-config. The prefix is derived from the .pc file's own location so the
# installed tree can be moved (and installed with `cmake --install --prefix`).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(COVENANT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(COVENANT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
  set(COVENANT_PC_PREFIX "\${pcfiledir}/${_pc_up}")
  set(COVENANT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(COVENANT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(COVENANT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# The public headers need RE2 (Requires) and Boost.JSON (Libs); spdlog, fmt and libcurl are the
# library's own business, so no consumer's compile line may carry their flags (spdlog's
# -DSPDLOG_* among them). They are in neither Requires nor Requires.private: pkg-config and pkgconf
# add the Cflags of Requires.private packages to `--cflags` too. A static libcovenant needs them at
# link time: their link flags, resolved here, go into Libs, so that both `pkg-config --libs` and
# `pkg-config --static --libs` link it; a shared one carries its own dependencies.
if(COVENANT_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  pkg_check_modules(COVENANT_PC_PRIVATE_DEPS QUIET spdlog fmt libcurl sqlite3 libcrypto)
  set(_pc_private_libs "")
  if(COVENANT_PC_PRIVATE_DEPS_FOUND)
    foreach(_dir IN LISTS COVENANT_PC_PRIVATE_DEPS_LIBRARY_DIRS)
      if(NOT _dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)  # no -L for the system's own
        list(APPEND _pc_private_libs "-L${_dir}")
      endif()
    endforeach()
    foreach(_lib IN LISTS COVENANT_PC_PRIVATE_DEPS_LIBRARIES)
      list(APPEND _pc_private_libs "-l${_lib}")
    endforeach()
    list(APPEND _pc_private_libs ${COVENANT_PC_PRIVATE_DEPS_LDFLAGS_OTHER})
  else()
    set(_pc_private_libs -lspdlog -lfmt -lcurl -lsqlite3 -lcrypto)
  endif()
  list(APPEND _pc_private_libs -pthread)
  # Each flag once, at its last place (a library before the ones it needs stays so).
  list(REVERSE _pc_private_libs)
  list(REMOVE_DUPLICATES _pc_private_libs)
  list(REVERSE _pc_private_libs)
  list(JOIN _pc_private_libs " " COVENANT_PC_LIBS_EXTRA)
else()
  set(COVENANT_PC_LIBS_EXTRA "")
endif()
set(COVENANT_PC_REQUIRES "re2")
configure_file("${PROJECT_SOURCE_DIR}/cmake/covenant.pc.in"
  "${PROJECT_BINARY_DIR}/covenant.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/covenant.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET covenant_gtest)
  configure_file("${PROJECT_SOURCE_DIR}/cmake/covenant-gtest.pc.in"
    "${PROJECT_BINARY_DIR}/covenant-gtest.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/covenant-gtest.pc"
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
