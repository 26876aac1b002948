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

function(run_step what)
  list(JOIN ARGN " " shown)
  message(STATUS "[install_and_consume] ${what}: ${shown}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(NOTICE "command: ${shown}\n${out}")
    message(FATAL_ERROR "[install_and_consume] ${what} FAILED (${result})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
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
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
run_step("build consumer" "${CMAKE_COMMAND}" --build "${cmake_build}" --config "${BUILD_TYPE}")
set(exe "${cmake_build}/covenant_consumer")
if(NOT EXISTS "${exe}")
  file(GLOB_RECURSE exe "${cmake_build}/covenant_consumer" "${cmake_build}/covenant_consumer.exe")
endif()
run_step("run consumer (CMake)" "${exe}")
expect_version("consumer (CMake)" "${step_output}")
run_step("run consumer test (CMake, covenant::gtest)" "${cmake_build}/covenant_consumer_test")

# 2. pkg-config
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
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

# 3. pkg-config for the GoogleTest helpers, main from gmock_main
run_step("pkg-config (covenant-gtest)" "${PKG_CONFIG_EXECUTABLE}" --cflags --libs covenant-gtest gmock_main)
string(STRIP "${step_output}" pc_test_flags)
separate_arguments(pc_test_flags UNIX_COMMAND "${pc_test_flags}")
set(pc_test_exe "${WORK_DIR}/covenant_consumer_test_pkgconfig")
run_step("compile consumer test (pkg-config)" "${CXX_COMPILER}" -std=c++20
  "${SOURCE_DIR}/agent_test.cpp" -o "${pc_test_exe}" ${pc_test_flags})
run_step("run consumer test (pkg-config)" "${pc_test_exe}")

message(STATUS "[install_and_consume] OK")
