# Compile-fail tests.
#
# Every tests/compile_fail/<name>.cpp must start with a line
#   // expect: <regex>
# (a CMake regular expression). The ctest test compile_fail.<name> runs the
# C++ compiler with -fsyntax-only, the C++20 flag and the library's include
# directories and compile definitions (those of Boost, fmt, spdlog, RE2
# included), and passes only if compilation fails AND the compiler output
# matches the regex. Write regexes that match both g++ and clang++ output
# (e.g. the text of a static_assert message).
include_guard(GLOBAL)

function(covenant_add_compile_fail_tests)
  file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/compile_fail/*.cpp")
  if(NOT sources)
    return()
  endif()

  # Include directories / definitions of the covenant target including its
  # usage requirements, evaluated at generate time.
  set(flags_file "${PROJECT_BINARY_DIR}/compile_fail_flags.cmake")
  set(incs "$<TARGET_PROPERTY:covenant,INCLUDE_DIRECTORIES>")
  set(defs "$<TARGET_PROPERTY:covenant,INTERFACE_COMPILE_DEFINITIONS>")
  file(GENERATE OUTPUT "${flags_file}" CONTENT
"set(CF_COMPILER [==[${CMAKE_CXX_COMPILER}]==])
set(CF_STD_FLAG [==[${CMAKE_CXX20_STANDARD_COMPILE_OPTION}]==])
set(CF_INCLUDES [==[$<REMOVE_DUPLICATES:${incs}>]==])
set(CF_DEFINES [==[$<REMOVE_DUPLICATES:${defs}>]==])
set(CF_IMPLICIT_INCLUDES [==[${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES}]==])
")

  foreach(src IN LISTS sources)
    get_filename_component(name "${src}" NAME_WE)
    add_test(NAME compile_fail.${name}
      COMMAND "${CMAKE_COMMAND}"
        "-DFLAGS_FILE=${flags_file}"
        "-DSOURCE=${src}"
        -P "${PROJECT_SOURCE_DIR}/cmake/compile_fail_check.cmake")
  endforeach()
endfunction()
