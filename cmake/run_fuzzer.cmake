# Runs one libFuzzer target for a few seconds as a test: a fresh working corpus in the build
# tree, started from the checked-in seeds (read only), crash artifacts kept in the build tree.
#   cmake -DFUZZER=<exe> -DSEEDS=<dir>[|<dir>...] -DWORK=<dir> -DSECONDS=<n> -P run_fuzzer.cmake
# SEEDS lists one or more seed directories, separated by '|'.
foreach(var FUZZER WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}/corpus")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
set(dirs "${WORK}/corpus")
if(DEFINED SEEDS)
  string(REPLACE "|" ";" seed_dirs "${SEEDS}")
  foreach(dir IN LISTS seed_dirs)
    if(IS_DIRECTORY "${dir}")
      list(APPEND dirs "${dir}")
    endif()
  endforeach()
endif()
execute_process(
  COMMAND "${FUZZER}" "-max_total_time=${SECONDS}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          "-artifact_prefix=${WORK}/artifacts/" ${dirs}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); the input is in ${WORK}/artifacts/")
endif()
