# cmake -DFLAGS_FILE=<compile_fail_flags.cmake> -DSOURCE=<file.cpp> -P compile_fail_check.cmake
#
# Passes when compiling SOURCE fails and the compiler output matches the
# regex given on the first line of SOURCE as `// expect: <regex>`.
cmake_minimum_required(VERSION 3.25)

foreach(var FLAGS_FILE SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "compile_fail_check: ${var} not set")
  endif()
endforeach()
include("${FLAGS_FILE}")

file(READ "${SOURCE}" head LIMIT 4096)
if(NOT head MATCHES "^// expect: ([^\r\n]+)")
  message(FATAL_ERROR "${SOURCE}: first line must be `// expect: <regex>`")
endif()
set(expect "${CMAKE_MATCH_1}")
string(STRIP "${expect}" expect)

set(args ${CF_STD_FLAG} -fsyntax-only)
foreach(dir IN LISTS CF_INCLUDES)
  if(dir STREQUAL "" OR dir IN_LIST CF_IMPLICIT_INCLUDES)
    continue()
  endif()
  list(APPEND args "-I${dir}")
endforeach()
foreach(def IN LISTS CF_DEFINES)
  if(NOT def STREQUAL "")
    list(APPEND args "-D${def}")
  endif()
endforeach()

execute_process(
  COMMAND "${CF_COMPILER}" ${args} "${SOURCE}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(output "${err}${out}")

list(JOIN args " " shown_args)
set(command_line "${CF_COMPILER} ${shown_args} ${SOURCE}")

if(result EQUAL 0)
  message(NOTICE "command: ${command_line}\n${output}")
  message(FATAL_ERROR "${SOURCE} compiled successfully but must fail to compile")
endif()
if(NOT output MATCHES "${expect}")
  message(NOTICE "command: ${command_line}\n--- compiler output ---\n${output}---")
  message(FATAL_ERROR "${SOURCE} failed to compile as expected, but the "
    "compiler output (above) does not match the regex: ${expect}")
endif()
message(STATUS "compile_fail: ${SOURCE} failed as expected (matched `${expect}`)")
