# Checks the dynamic symbols a shared libcovenant exports (run by shared_library_check.cmake):
#
#   cmake -DLIBRARY=<path to libcovenant.so> [-DNM=nm] [-DCXXFILT=c++filt] -P check_exports.cmake
#
# covenant is built with hidden visibility (CXX_VISIBILITY_PRESET hidden, VISIBILITY_INLINES_HIDDEN)
# and exports what COVENANT_API marks. The rule, on each symbol of `nm -D --defined-only` (mangled
# names, Itanium ABI; the linker's own _edata, _end, __bss_start, _init and _fini aside):
#   - a strong symbol (nm types T, D, B, R...) must be covenant's: an entity of namespace covenant,
#     or the vtable, typeinfo, VTT, guard variable or thunk of one;
#   - a weak, vague-linkage symbol (W, V, u: an inline function, a template instantiation, a vtable
#     or typeinfo emitted where it is used) must be covenant's too, or belong to a dependency whose
#     headers give it default visibility on purpose, so that an instantiation made in the library's
#     code is exported whatever -fvisibility says and every program using the same template shares
#     one copy:
#       std, __gnu_cxx    libstdc++ declares its namespaces with default visibility
#                         (std::vector<covenant::issue>::_M_realloc_insert, shared_ptr control blocks)
#       boost::asio       Asio's headers push default visibility: its services, their ids and the
#                         thread-local call stacks must be one across a program whose io_context the
#                         library runs on (covenant::runtime takes one)
#       boost::system, boost::exception, boost::exception_detail, boost::wrapexcept
#                         Boost's exception types are BOOST_SYMBOL_VISIBLE (caught across libraries)
#       spdlog::sinks     spdlog's sink classes are SPDLOG_API (the vtables of sinks the library uses)
#   - no symbol of the namespaces only src/ uses (covenant::lenient_impl, covenant::schema_file_impl,
#     covenant::cli): those are exported only when the hidden visibility is lost.
# Anything else fails: code of Boost.JSON, fmt, spdlog, libcurl or RE2 compiled into the library, a C
# function, a symbol of another namespace. At least covenant::version() must be exported.
cmake_minimum_required(VERSION 3.20)
if(NOT LIBRARY OR NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "check_exports.cmake: set -DLIBRARY=<libcovenant.so> (got \"${LIBRARY}\")")
endif()
if(NOT NM)
  find_program(NM NAMES nm REQUIRED)
endif()
if(NOT CXXFILT)
  find_program(CXXFILT NAMES c++filt)
endif()

execute_process(COMMAND "${NM}" -D --defined-only --format=posix "${LIBRARY}"
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "check_exports: ${NM} failed on ${LIBRARY}: ${err}")
endif()
string(REPLACE ";" "\\;" out "${out}")
string(REPLACE "\n" ";" lines "${out}")

# The mangled name of an entity or type, once the prefix of a special symbol (vtable, typeinfo,
# typeinfo name, VTT, TLS wrapper, guard variable, reference temporary, thunk) and of a local entity
# (_ZZ: a static inside a function, a lambda) is taken off.
function(entity_of symbol out)
  set(rest "")
  if(symbol MATCHES "^_Z(.*)$")
    set(rest "${CMAKE_MATCH_1}")
  endif()
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    foreach(re "^T[VISTHW](.*)$" "^G[VR](.*)$" "^Thn?[0-9]+_(.*)$" "^Tvn?[0-9]+_n?[0-9]+_(.*)$"
               "^Tc.*_(N.*)$" "^Z(.*)$" "^(P|R|O|K|V|r|Do|Dx|F)(.*)$")
      if(rest MATCHES "${re}")
        # The last pattern: a pointer, reference, qualified or function type (the typeinfo of one).
        if(CMAKE_MATCH_COUNT EQUAL 2)
          set(rest "${CMAKE_MATCH_2}")
        else()
          set(rest "${CMAKE_MATCH_1}")
        endif()
        set(changed TRUE)
        break()
      endif()
    endforeach()
  endwhile()
  set(${out} "${rest}" PARENT_SCOPE)
endfunction()

set(total 0)
set(own 0)
set(dep_weak 0)
# std::, __gnu_cxx:: (St, Sa, Sb, Ss, Si, So, Sd: the standard abbreviations), boost::asio::,
# boost_asio_*_fn (Asio's customisation-point objects), boost::system::, boost::exception,
# boost::exception_detail::, boost::wrapexcept<>, spdlog::sinks::.
set(visible_dependencies "^(N[rVKRO]*)?(St|S[absiod]|9__gnu_cxx|5boost4asio|[0-9]+boost_asio_[a-z_]+_fn|5boost6system|5boost9exception|5boost16exception_detail|5boost10wrapexcept|6spdlog5sinks)")
set(bad "")
set(has_version FALSE)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^([^ ]+) ([A-Za-z]) ")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  set(type "${CMAKE_MATCH_2}")
  if(name MATCHES "^(_edata|_end|__bss_start|_init|_fini)$")
    continue()
  endif()
  math(EXPR total "${total} + 1")
  if(name STREQUAL "_ZN8covenant7versionEv")
    set(has_version TRUE)
  endif()
  entity_of("${name}" entity)
  # N<qualifiers>8covenant... (a nested name) or 8covenant... (unreachable: covenant is a namespace).
  if(entity MATCHES "^N[rVKRO]*8covenant(11lenient_impl|16schema_file_impl|3cli)")
    list(APPEND bad "${type} ${name}")
  elseif(entity MATCHES "^N[rVKRO]*8covenant")
    math(EXPR own "${own} + 1")
  elseif(type MATCHES "^[WVu]$" AND entity MATCHES "${visible_dependencies}")
    math(EXPR dep_weak "${dep_weak} + 1")
  else()
    list(APPEND bad "${type} ${name}")
  endif()
endforeach()

if(total EQUAL 0)
  message(FATAL_ERROR "check_exports: ${LIBRARY} exports no symbol")
endif()
message(STATUS "[check_exports] ${LIBRARY}: ${total} dynamic symbols: ${own} of covenant, "
               "${dep_weak} weak ones of dependencies that make them visible (std, Boost.Asio...)")
if(bad)
  list(LENGTH bad count)
  set(shown "")
  foreach(entry IN LISTS bad)
    string(REGEX REPLACE "^. " "" mangled "${entry}")
    set(demangled "")
    if(CXXFILT)
      execute_process(COMMAND "${CXXFILT}" "${mangled}" OUTPUT_VARIABLE demangled OUTPUT_STRIP_TRAILING_WHITESPACE)
    endif()
    string(APPEND shown "\n  ${entry}  ${demangled}")
  endforeach()
  message(FATAL_ERROR "check_exports: ${count} exported symbols are not covenant's "
                      "(hidden visibility leaks, see cmake/check_exports.cmake):${shown}")
endif()
if(NOT has_version)
  message(FATAL_ERROR "check_exports: covenant::version() is not exported: is COVENANT_API defined empty?")
endif()
message(STATUS "[check_exports] OK")
