# Every path docs/architecture.md names exists, run as the ctest `architecture_paths`:
#   cmake -DSOURCE_DIR=<repository> -P check_doc_paths.cmake
#
# The map of the sources is only useful while it is true. Each `quoted` name in the page that looks
# like a file or a folder of the repository (it ends in .hpp, .cpp, .cmake, .in or .md, or it is a
# folder under src/, include/, tests/, cmake/, fuzz/, benchmarks/ or examples/ ending in "/") must
# match a file or folder of the repository: as a path from the repository's root, or as the end of
# one (`reflect.hpp`, `engine/wire_dialect.hpp`); `*` matches any part of a name
# (`src/runtime/schema_file_*.cpp`). Fails naming every name that matches nothing.
cmake_minimum_required(VERSION 3.20)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_doc_paths.cmake: set -DSOURCE_DIR=<repository>")
endif()

set(doc "${SOURCE_DIR}/docs/architecture.md")
file(READ "${doc}" text)
# Every `...` span (code spans hold no newline here).
string(REGEX MATCHALL "`[^`\n]+`" spans "${text}")

file(GLOB_RECURSE all_files RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/src/*" "${SOURCE_DIR}/include/*" "${SOURCE_DIR}/tests/*" "${SOURCE_DIR}/cmake/*"
     "${SOURCE_DIR}/fuzz/*.cpp" "${SOURCE_DIR}/benchmarks/*" "${SOURCE_DIR}/examples/*" "${SOURCE_DIR}/docs/*"
     "${SOURCE_DIR}/*.md")
# The folders, as paths ending in "/".
set(all_dirs "")
foreach(f IN LISTS all_files)
  get_filename_component(d "${f}" DIRECTORY)
  while(d)
    list(APPEND all_dirs "${d}/")
    get_filename_component(d "${d}" DIRECTORY)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES all_dirs)

set(missing "")
set(checked 0)
foreach(span IN LISTS spans)
  string(REGEX REPLACE "^`(.*)`$" "\\1" name "${span}")
  set(is_file FALSE)
  set(is_dir FALSE)
  if(name MATCHES "^[A-Za-z0-9_./*-]+\\.(hpp|cpp|cmake|in|md)$")
    set(is_file TRUE)
  elseif(name MATCHES "^(src|include|tests|cmake|fuzz|benchmarks|examples)/[A-Za-z0-9_./*-]*/$")
    set(is_dir TRUE)
  endif()
  if(NOT is_file AND NOT is_dir)
    continue()
  endif()
  # Generated into the build tree, not the repository.
  if(name MATCHES "^covenant/(build_config|export)\\.hpp$")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  # The name as a regular expression: the whole path, or the end of one after a "/".
  string(REGEX REPLACE "([][+.?^$(){}|\\\\])" "\\\\\\1" pattern "${name}")
  string(REPLACE "*" "[^/]*" pattern "${pattern}")
  set(pattern "(^|/)${pattern}$")
  set(found FALSE)
  if(is_file)
    foreach(f IN LISTS all_files)
      if(f MATCHES "${pattern}")
        set(found TRUE)
        break()
      endif()
    endforeach()
  else()
    foreach(d IN LISTS all_dirs)
      if(d MATCHES "${pattern}")
        set(found TRUE)
        break()
      endif()
    endforeach()
  endif()
  if(NOT found)
    list(APPEND missing "${name}")
  endif()
endforeach()

if(checked LESS 20)
  message(FATAL_ERROR "check_doc_paths.cmake: only ${checked} paths found in ${doc}: is the page there?")
endif()
if(missing)
  list(REMOVE_DUPLICATES missing)
  string(REPLACE ";" "\n  " list "${missing}")
  message(FATAL_ERROR "docs/architecture.md names paths that do not exist:\n  ${list}")
endif()
message(STATUS "docs/architecture.md: ${checked} named paths, all present")
