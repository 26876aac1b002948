# Documentation snippets compiled (and run) as tests.
#
# Every fenced block whose opening line is exactly ```cpp in README.md and
# docs/*.md is written, in order, to
#   ${PROJECT_BINARY_DIR}/snippets/<doc>_<n>.cpp      (n counts from 1 per file)
# and built as the executable snippet_<doc>_<n> linking covenant:
#   - a snippet that includes <gtest/gtest.h> (or <gmock/gmock.h>) also links
#     GTest::gmock and GTest::gtest_main (it has no main of its own) and is run
#     as the ctest test snippet.<doc>_<n>;
#   - a snippet containing `int main` is run as the ctest test snippet.<doc>_<n>;
#   - any other snippet is compile-only: it is built in ALL, linked with an
#     empty main(), and not run.
# Snippets are compiled without NDEBUG in every build type: their assert()s
# are what a run checks.
# Each block must be a complete translation unit. A #line directive maps
# compiler diagnostics back to the Markdown file.
# The Markdown files are configure dependencies: editing one and building
# re-extracts the snippets.
include_guard(GLOBAL)

# Writes the ```cpp blocks of `doc` as <out_dir>/<docname>_<n>.cpp and returns
# the list of written files in `out_var`.
function(covenant_extract_snippets doc docname out_dir out_var)
  file(READ "${doc}" text)
  string(REPLACE "\r" "" text "${text}")
  # Protect the characters that CMake lists treat specially, then split lines.
  string(ASCII 28 bslash)
  string(ASCII 29 open_br)
  string(ASCII 30 close_br)
  string(ASCII 31 semi)
  string(REPLACE "\\" "${bslash}" text "${text}")
  string(REPLACE ";" "${semi}" text "${text}")
  string(REPLACE "[" "${open_br}" text "${text}")
  string(REPLACE "]" "${close_br}" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")

  set(state "text")   # text | cpp | other
  set(count 0)
  set(line_no 0)
  set(written "")
  foreach(line IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    if(state STREQUAL "text")
      if(line MATCHES "^ ? ? ?```cpp[ \t]*$")
        set(state "cpp")
        math(EXPR count "${count} + 1")
        math(EXPR first "${line_no} + 1")
        set(body "#line ${first} \"${doc}\"\n")
      elseif(line MATCHES "^ ? ? ?```")
        set(state "other")
      endif()
    elseif(line MATCHES "^ ? ? ?```[ \t]*$")
      if(state STREQUAL "cpp")
        string(REPLACE "${semi}" ";" body "${body}")
        string(REPLACE "${open_br}" "[" body "${body}")
        string(REPLACE "${close_br}" "]" body "${body}")
        string(REPLACE "${bslash}" "\\" body "${body}")
        set(file "${out_dir}/${docname}_${count}.cpp")
        file(WRITE "${file}.tmp" "${body}")
        file(COPY_FILE "${file}.tmp" "${file}" ONLY_IF_DIFFERENT)
        file(REMOVE "${file}.tmp")
        list(APPEND written "${file}")
      endif()
      set(state "text")
    elseif(state STREQUAL "cpp")
      string(APPEND body "${line}\n")
    endif()
  endforeach()
  if(state STREQUAL "cpp")
    message(FATAL_ERROR "${doc}: unterminated ```cpp block (snippet ${count})")
  endif()
  set(${out_var} "${written}" PARENT_SCOPE)
endfunction()

function(covenant_add_doc_snippets)
  set(out_dir "${PROJECT_BINARY_DIR}/snippets")
  file(MAKE_DIRECTORY "${out_dir}")

  set(docs "")
  if(EXISTS "${PROJECT_SOURCE_DIR}/README.md")
    list(APPEND docs "${PROJECT_SOURCE_DIR}/README.md")
  endif()
  # CONFIGURE_DEPENDS: adding/removing a docs/*.md file re-runs the glob.
  file(GLOB doc_pages CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
  list(SORT doc_pages)
  list(APPEND docs ${doc_pages})
  # Editing any of them re-runs configure, which re-extracts.
  set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${docs})

  set(all_snippets "")
  foreach(doc IN LISTS docs)
    get_filename_component(docname "${doc}" NAME_WE)
    string(REGEX REPLACE "[^A-Za-z0-9_]" "_" docname "${docname}")
    covenant_extract_snippets("${doc}" "${docname}" "${out_dir}" snippets)
    list(APPEND all_snippets ${snippets})
  endforeach()

  # Drop files left over from blocks that no longer exist.
  file(GLOB stale "${out_dir}/*.cpp")
  foreach(file IN LISTS stale)
    if(NOT file IN_LIST all_snippets)
      file(REMOVE "${file}")
    endif()
  endforeach()

  set(stub_main "${PROJECT_BINARY_DIR}/snippet_stub_main.cpp")
  file(CONFIGURE OUTPUT "${stub_main}" CONTENT
    "// Generated: main() for compile-only documentation snippets.\nint main() { return 0; }\n")

  foreach(file IN LISTS all_snippets)
    get_filename_component(name "${file}" NAME_WE)
    set(target "snippet_${name}")
    add_executable(${target} "${file}")
    target_link_libraries(${target} PRIVATE covenant)
    covenant_target_defaults(${target})
    covenant_data_dirs(${target})
    # A snippet's assert()s are its checks: kept in every build type (NDEBUG would drop them in a
    # Release tree, and leave the variables they read unused, which -Werror refuses).
    target_compile_options(${target} PRIVATE -UNDEBUG)

    file(READ "${file}" body)
    set(run FALSE)
    if(body MATCHES "#[ \t]*include[ \t]*<(gtest/gtest|gmock/gmock)\\.h>")
      target_link_libraries(${target} PRIVATE GTest::gmock GTest::gtest_main)
      set(run TRUE)
    elseif(body MATCHES "int[ \t\n]+main[ \t\n]*\\(")
      set(run TRUE)
    endif()
    if(run)
      add_test(NAME snippet.${name} COMMAND ${target})
    else()
      # Compile-only: linked with an empty main so undefined symbols show up.
      target_sources(${target} PRIVATE "${stub_main}")
    endif()
  endforeach()
endfunction()
