# Settings shared by every target of the project (library, tests, examples,
# benchmarks, snippets, header checks).
include_guard(GLOBAL)

# Warnings (+ -Werror with COVENANT_WARNINGS_AS_ERRORS) and sanitizers.
function(covenant_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(COVENANT_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(NOT COVENANT_SANITIZE STREQUAL "")
    target_compile_options(${target} PRIVATE
      -fsanitize=${COVENANT_SANITIZE} -fno-omit-frame-pointer)
    get_target_property(_type ${target} TYPE)
    if(NOT _type STREQUAL "OBJECT_LIBRARY" AND NOT _type STREQUAL "STATIC_LIBRARY")
      target_link_options(${target} PRIVATE -fsanitize=${COVENANT_SANITIZE})
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
