# run_step(what COMMAND [ARGS...]) for the -P scripts (install_and_consume.cmake,
# shared_library_check.cmake): runs the command, fails naming it with its output when it fails, and
# leaves its output in `step_output`. Messages are prefixed with [${RUN_STEP_LABEL}].
include_guard(GLOBAL)

function(run_step what)
  list(JOIN ARGN " " shown)
  message(STATUS "[${RUN_STEP_LABEL}] ${what}: ${shown}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(NOTICE "command: ${shown}\n${out}")
    message(FATAL_ERROR "[${RUN_STEP_LABEL}] ${what} FAILED (${result})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
