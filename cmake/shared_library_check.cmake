# covenant as a shared library: builds it (and the command-line tool, which links it) in a build
# tree of its own, checks what libcovenant.so exports (check_exports.cmake), runs the tool once, then
# installs the tree into a private prefix and builds and runs tests/consumer against it
# (install_and_consume.cmake). Run by the ctest test `shared_library`:
#
#   cmake -DSOURCE_DIR=<repository> -DWORK_DIR=... -DCXX_COMPILER=... -DGENERATOR=...
#         -DBUILD_TYPE=... -DLIBDIR=... [-DWERROR=ON] [-DJOBS=2] -P shared_library_check.cmake
#
# The tree (WORK_DIR/build) is kept between runs, so a later run rebuilds only what changed. It is
# built without tests, examples, benchmarks, optimisation or debug information: only its symbols and
# its use from other programs are checked here.
cmake_minimum_required(VERSION 3.25)

foreach(var SOURCE_DIR WORK_DIR CXX_COMPILER GENERATOR LIBDIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "shared_library_check: ${var} not set")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Debug)
endif()
if(NOT JOBS)
  set(JOBS 2)
endif()
if(NOT DEFINED WERROR)
  set(WERROR OFF)
endif()

set(RUN_STEP_LABEL shared_library)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

set(build "${WORK_DIR}/build")
string(TOUPPER "${BUILD_TYPE}" config)
run_step("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  "-DCMAKE_CXX_FLAGS_${config}=-O0"
  -DBUILD_SHARED_LIBS=ON
  "-DCOVENANT_WARNINGS_AS_ERRORS=${WERROR}"
  -DCOVENANT_BUILD_TESTS=OFF
  -DCOVENANT_BUILD_EXAMPLES=OFF
  -DCOVENANT_BUILD_BENCHMARKS=OFF
  -DCOVENANT_BUILD_FUZZERS=OFF)
run_step("build" "${CMAKE_COMMAND}" --build "${build}" --config "${BUILD_TYPE}" --parallel "${JOBS}")

file(GLOB library "${build}/libcovenant.so" "${build}/${BUILD_TYPE}/libcovenant.so")
if(NOT library)
  message(FATAL_ERROR "[shared_library] no libcovenant.so in ${build}")
endif()
list(GET library 0 library)
run_step("exported symbols" "${CMAKE_COMMAND}" "-DLIBRARY=${library}" -P "${CMAKE_CURRENT_LIST_DIR}/check_exports.cmake")
message(STATUS "${step_output}")

# The command-line tool links the shared library (and calls a few functions of its private headers).
file(GLOB cli "${build}/covenant" "${build}/${BUILD_TYPE}/covenant")
if(cli)
  list(GET cli 0 cli)
  run_step("run the command-line tool" "${cli}" --version)
endif()

run_step("install and consume" "${CMAKE_COMMAND}"
  "-DBINARY_DIR=${build}"
  "-DSOURCE_DIR=${SOURCE_DIR}/tests/consumer"
  "-DPREFIX=${WORK_DIR}/prefix"
  "-DWORK_DIR=${WORK_DIR}/consumer"
  "-DCXX_COMPILER=${CXX_COMPILER}"
  "-DBUILD_TYPE=${BUILD_TYPE}"
  "-DLIBDIR=${LIBDIR}"
  -P "${CMAKE_CURRENT_LIST_DIR}/install_and_consume.cmake")
message(STATUS "[shared_library] OK")
