# The naming rule of a function that can fail (docs/architecture.md, "Names"), run as the ctest
# `names_try_pairs`:
#   cmake -DSOURCE_DIR=<repository> -P check_names.cmake
#
# The plain name throws; the try_ form returns a result. Over every header under include/covenant/
# (detail/ folders included), this fails naming
#   - every function whose name ends in `_or_throw` (the throwing form is the plain name), and
#   - every function declared with a name `try_X` when the same header declares no function `X`
#     (a try_ form without its throwing counterpart).
#
# A grep-level check, not a C++ parser. Its limits:
#   - `//` comments are dropped to the end of the line (so is the rest of a line after a `//` in a
#     string literal); `/* */` comments and string literals are read as code;
#   - a declaration is a name followed by `(` after a word, `>`, `&` or `*` (its return type or a
#     specifier), possibly on an earlier line; after `return`, `throw`, `co_return`, `else`, `case`,
#     `new` or `delete` it is a call. `_or_throw` names are refused wherever they are followed by
#     `(` or `<`, declared or called;
#   - a counterpart is any function of that name in the same header: its class, parameters and
#     return type are not compared, and one declared in another header (or made by a macro, or
#     brought in by a using-declaration) is not seen;
#   - a function that can fail and returns its issues under a plain name (the rule broken the
#     other way round) is not found: which functions are queries is a judgement the check cannot
#     make (docs/architecture.md says how to tell).
cmake_minimum_required(VERSION 3.20)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_names.cmake: set -DSOURCE_DIR=<repository>")
endif()

set(call_words return throw co_return else case new delete)

# The names of the functions `code` declares whose name matches `name_regex`, in order.
function(declared_functions code name_regex out)
  string(REGEX MATCHALL "[A-Za-z0-9_>&*]+ +${name_regex} *\\(" found "${code}")
  set(names "")
  foreach(m IN LISTS found)
    string(REGEX MATCH "^([A-Za-z0-9_>&*]+) +(${name_regex}) *\\($" _ "${m}")
    set(before "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    if(NOT before IN_LIST call_words)
      list(APPEND names "${name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE headers LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/include/covenant/*.hpp")
list(SORT headers)

set(problems "")
set(pairs 0)
foreach(header IN LISTS headers)
  file(READ "${SOURCE_DIR}/${header}" code)
  string(REGEX REPLACE "//[^\n]*" "" code "${code}")
  string(REGEX REPLACE "[ \t\r\n]+" " " code "${code}")

  string(REGEX MATCHALL "[A-Za-z0-9_]+_or_throw *[(<]" or_throw "${code}")
  foreach(m IN LISTS or_throw)
    string(REGEX REPLACE " *[(<]$" "" name "${m}")
    string(REGEX REPLACE "_or_throw$" "" plain "${name}")
    list(APPEND problems "${header}: ${name}: the throwing form is the plain name, `${plain}`")
  endforeach()

  declared_functions("${code}" "try_[A-Za-z0-9_]+" tries)
  foreach(try_name IN LISTS tries)
    string(REGEX REPLACE "^try_" "" plain "${try_name}")
    declared_functions("${code}" "${plain}" plains)
    if(plain IN_LIST plains)
      math(EXPR pairs "${pairs} + 1")
    else()
      list(APPEND problems "${header}: ${try_name} has no throwing counterpart `${plain}` in the same header")
    endif()
  endforeach()
endforeach()

# The pairs known when this check was written (decode, from_value, schema_set::parse, ...): fewer
# means the scan no longer sees declarations.
if(pairs LESS 10)
  list(APPEND problems "only ${pairs} pairs of a try_ form and its plain name found: the scan is broken")
endif()
if(problems)
  list(LENGTH problems count)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "${count} breaks of the naming rule (docs/architecture.md, \"Names\": the plain name "
                      "throws; the try_ form returns a result):\n  ${text}")
endif()
message(STATUS "${pairs} try_ forms, each with its throwing counterpart; no _or_throw names")
