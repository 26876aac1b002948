# Settings shared by every target of the project (library, tests, examples,
# benchmarks, snippets, header checks).
include_guard(GLOBAL)

# Warnings (+ -Werror with COVENANT_WARNINGS_AS_ERRORS) and sanitizers.
function(covenant_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(COVENANT_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # Coverage instrumentation for the fuzzers (fuzzer-no-link) is only needed in the library and
  # the fuzz targets; elsewhere it is left out (clang 14 also fails to assemble coroutines built
  # with it and UBSan together).
  set(_sanitize "${COVENANT_SANITIZE}")
  if(NOT target STREQUAL "covenant" AND NOT target MATCHES "^fuzz_")
    string(REPLACE "fuzzer-no-link" "" _sanitize "${_sanitize}")
    string(REGEX REPLACE ",+" "," _sanitize "${_sanitize}")
    string(REGEX REPLACE "^,|,$" "" _sanitize "${_sanitize}")
  endif()
  if(NOT _sanitize STREQUAL "")
    target_compile_options(${target} PRIVATE
      -fsanitize=${_sanitize} -fno-omit-frame-pointer)
    get_target_property(_type ${target} TYPE)
    if(NOT _type STREQUAL "OBJECT_LIBRARY" AND NOT _type STREQUAL "STATIC_LIBRARY")
      target_link_options(${target} PRIVATE -fsanitize=${_sanitize})
    endif()
  endif()
endfunction()

# COVENANT_SHARED_DIR (sample data beside the repository, may not exist) and
# COVENANT_SOURCE_DIR (the source tree) as string literals.
function(covenant_data_dirs target)
  target_compile_definitions(${target} PRIVATE
    "COVENANT_SHARED_DIR=\"${COVENANT_SHARED_DIR}\""
    "COVENANT_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}\"")
endfunction()
