# Header self-containment check.
#
# For every include/covenant/**/*.hpp a translation unit that includes only
# that header (twice, to exercise the include guard / #pragma once) is
# generated into ${PROJECT_BINARY_DIR}/header_check/, and all of them are
# compiled into the OBJECT library covenant_header_check (part of ALL).
# The ctest test `headers_compile_alone` builds that target.
include_guard(GLOBAL)

function(covenant_add_header_check)
  set(include_root "${PROJECT_SOURCE_DIR}/include")
  set(out_dir "${PROJECT_BINARY_DIR}/header_check")
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS
    LIST_DIRECTORIES false
    RELATIVE "${include_root}"
    "${include_root}/covenant/*.hpp")
  list(SORT headers)

  set(sources "")
  foreach(header IN LISTS headers)
    string(REGEX REPLACE "[^A-Za-z0-9_]" "_" stem "${header}")
    set(source "${out_dir}/${stem}.cpp")
    set(COVENANT_HEADER "${header}")
    # file(CONFIGURE) only rewrites the file when its content changes.
    file(CONFIGURE OUTPUT "${source}" CONTENT
"// Generated: checks that <@COVENANT_HEADER@> compiles on its own.
#include <@COVENANT_HEADER@>
#include <@COVENANT_HEADER@>
" @ONLY)
    list(APPEND sources "${source}")
  endforeach()

  if(NOT sources)
    return()
  endif()

  add_library(covenant_header_check OBJECT ${sources})
  target_link_libraries(covenant_header_check PRIVATE covenant)
  covenant_target_defaults(covenant_header_check)

  add_test(NAME headers_compile_alone
    COMMAND "${CMAKE_COMMAND}" --build "${PROJECT_BINARY_DIR}"
            --target covenant_header_check --config $<CONFIG>)
  set_tests_properties(headers_compile_alone PROPERTIES RESOURCE_LOCK covenant_build_tree)
endfunction()
