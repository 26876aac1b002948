# Install the build tree into a private prefix and consume it from
# tests/consumer, once through find_package(covenant CONFIG) and once through
# pkg-config. Run by the ctest test `install_and_consume`:
#
#   cmake -DBINARY_DIR=... -DSOURCE_DIR=<tests/consumer> -DPREFIX=...
#         -DWORK_DIR=... -DCXX_COMPILER=... -DBUILD_TYPE=... -DLIBDIR=...
#         -P install_and_consume.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var BINARY_DIR SOURCE_DIR PREFIX WORK_DIR CXX_COMPILER LIBDIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume: ${var} not set")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Debug)
endif()

set(RUN_STEP_LABEL install_and_consume)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

# Fails when `flags` (a compile line's flags, as one string) carry those of covenant's private
# dependencies (spdlog, fmt, libcurl): a -D of spdlog's or fmt's, a path naming them, or any flag
# that `pkg-config --cflags spdlog fmt libcurl` gives and `allowed` (a list: the flags the public
# dependencies bring) does not. A consumer compiles without them.
function(expect_no_private_cflags what flags allowed)
  separate_arguments(tokens UNIX_COMMAND "${flags}")
  set(private_flags "")
  if(PKG_CONFIG_EXECUTABLE)
    execute_process(COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags spdlog fmt libcurl
      RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_QUIET)
    if(result EQUAL 0)
      string(STRIP "${out}" out)
      separate_arguments(private_flags UNIX_COMMAND "${out}")
    endif()
  endif()
  set(bad "")
  foreach(t IN LISTS tokens)
    if(t MATCHES "^-D(SPDLOG|FMT)_" OR t MATCHES "(^|[/=])(spdlog|fmt)([/.-]|$)"
       OR (t IN_LIST private_flags AND NOT t IN_LIST allowed))
      list(APPEND bad "${t}")
    endif()
  endforeach()
  if(bad)
    message(NOTICE "${what}: ${flags}")
    message(FATAL_ERROR "[install_and_consume] ${what} carries private dependencies' compile flags: ${bad}")
  endif()
  message(STATUS "[install_and_consume] ${what}: no spdlog, fmt or libcurl flags")
endfunction()

function(expect_version what output)
  if(NOT output MATCHES "[0-9]+\\.[0-9]+\\.[0-9]+")
    message(NOTICE "${output}")
    message(FATAL_ERROR "[install_and_consume] ${what} printed no version")
  endif()
  string(STRIP "${output}" output)
  message(STATUS "[install_and_consume] ${what} printed: ${output}")
endfunction()

file(REMOVE_RECURSE "${PREFIX}")
run_step("install" "${CMAKE_COMMAND}" --install "${BINARY_DIR}"
  --prefix "${PREFIX}" --config "${BUILD_TYPE}")

# 1. find_package(covenant CONFIG)
set(cmake_build "${WORK_DIR}/cmake")
file(REMOVE_RECURSE "${cmake_build}")
run_step("configure consumer" "${CMAKE_COMMAND}"
  -S "${SOURCE_DIR}" -B "${cmake_build}"
  "-DCMAKE_PREFIX_PATH=${PREFIX}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
run_step("build consumer" "${CMAKE_COMMAND}" --build "${cmake_build}" --config "${BUILD_TYPE}")
# covenant::covenant gives its private dependencies (spdlog, fmt, libcurl) as link dependencies
# only: the consumer's compile line has none of their flags.
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf REQUIRED)
# What the public dependencies bring may be on it (RE2's -pthread, which spdlog's flags have too).
run_step("pkg-config --cflags (public dependencies)" "${PKG_CONFIG_EXECUTABLE}" --cflags re2)
string(STRIP "${step_output}" public_cflags)
separate_arguments(public_cflags UNIX_COMMAND "${public_cflags}")
file(READ "${cmake_build}/compile_commands.json" commands)
string(JSON n LENGTH "${commands}")
math(EXPR last "${n} - 1")
set(checked 0)
foreach(i RANGE ${last})
  string(JSON file GET "${commands}" ${i} file)
  if(file MATCHES "/main\\.cpp$")
    string(JSON line GET "${commands}" ${i} command)
    expect_no_private_cflags("the CMake consumer's compile line" "${line}" "${public_cflags}")
    math(EXPR checked "${checked} + 1")
  endif()
endforeach()
if(NOT checked EQUAL 1)
  message(FATAL_ERROR "[install_and_consume] main.cpp not found in ${cmake_build}/compile_commands.json")
endif()
set(exe "${cmake_build}/covenant_consumer")
if(NOT EXISTS "${exe}")
  file(GLOB_RECURSE exe "${cmake_build}/covenant_consumer" "${cmake_build}/covenant_consumer.exe")
endif()
run_step("run consumer (CMake)" "${exe}")
expect_version("consumer (CMake)" "${step_output}")
run_step("run consumer test (CMake, covenant::gtest)" "${cmake_build}/covenant_consumer_test")

# 2. pkg-config
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
# The compile flags name no private dependency (covenant.pc lists spdlog, fmt and libcurl in
# neither Requires nor Requires.private: pkg-config adds the Cflags of both to --cflags).
run_step("pkg-config --cflags" "${PKG_CONFIG_EXECUTABLE}" --cflags covenant)
string(STRIP "${step_output}" pc_cflags)
expect_no_private_cflags("pkg-config --cflags covenant" "${pc_cflags}" "${public_cflags}")
run_step("pkg-config" "${PKG_CONFIG_EXECUTABLE}" --cflags --libs covenant)
string(STRIP "${step_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
set(pc_exe "${WORK_DIR}/covenant_consumer_pkgconfig")
file(MAKE_DIRECTORY "${WORK_DIR}")
run_step("compile consumer (pkg-config)" "${CXX_COMPILER}" -std=c++20
  "${SOURCE_DIR}/main.cpp" -o "${pc_exe}" ${pc_flags})
# A shared libcovenant is not on the loader's path.
if(DEFINED ENV{LD_LIBRARY_PATH} AND NOT "$ENV{LD_LIBRARY_PATH}" STREQUAL "")
  set(ENV{LD_LIBRARY_PATH} "${PREFIX}/${LIBDIR}:$ENV{LD_LIBRARY_PATH}")
else()
  set(ENV{LD_LIBRARY_PATH} "${PREFIX}/${LIBDIR}")
endif()
run_step("run consumer (pkg-config)" "${pc_exe}")
expect_version("consumer (pkg-config)" "${step_output}")

# The same with `pkg-config --static --libs` (what a static libcovenant's link needs, private
# dependencies included).
run_step("pkg-config --static --libs" "${PKG_CONFIG_EXECUTABLE}" --static --libs covenant)
string(STRIP "${step_output}" pc_static_libs)
separate_arguments(pc_static_libs UNIX_COMMAND "${pc_static_libs}")
separate_arguments(pc_cflags_list UNIX_COMMAND "${pc_cflags}")
set(pc_static_exe "${WORK_DIR}/covenant_consumer_pkgconfig_static")
run_step("compile consumer (pkg-config --cflags, --static --libs)" "${CXX_COMPILER}" -std=c++20
  ${pc_cflags_list} "${SOURCE_DIR}/main.cpp" -o "${pc_static_exe}" ${pc_static_libs})
run_step("run consumer (pkg-config --static)" "${pc_static_exe}")
expect_version("consumer (pkg-config --static)" "${step_output}")

# 3. pkg-config for the GoogleTest helpers, main from gmock_main
run_step("pkg-config (covenant-gtest)" "${PKG_CONFIG_EXECUTABLE}" --cflags --libs covenant-gtest gmock_main)
string(STRIP "${step_output}" pc_test_flags)
separate_arguments(pc_test_flags UNIX_COMMAND "${pc_test_flags}")
set(pc_test_exe "${WORK_DIR}/covenant_consumer_test_pkgconfig")
run_step("compile consumer test (pkg-config)" "${CXX_COMPILER}" -std=c++20
  "${SOURCE_DIR}/agent_test.cpp" -o "${pc_test_exe}" ${pc_test_flags})
run_step("run consumer test (pkg-config)" "${pc_test_exe}")

message(STATUS "[install_and_consume] OK")
