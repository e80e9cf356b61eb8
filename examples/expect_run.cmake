# Runs CMD (a list) and checks how it ends: exit status EXPECT_RC and every string of EXPECT (a
# list) in its output (stdout and stderr together). The examples' command-line tests use it
# (examples/CMakeLists.txt): PASS_REGULAR_EXPRESSION alone would not check the exit status.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
set(all "${out}${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}; the output:\n${all}")
endif()
foreach(text IN LISTS EXPECT)
  string(FIND "${all}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output does not say '${text}' (exit ${rc}):\n${all}")
  endif()
endforeach()
message(STATUS "exit ${rc}, saying what was expected")
