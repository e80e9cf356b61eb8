# Helpers shared by the library, its tests and the curriculum.
include_guard(GLOBAL)

# Warnings (and -Werror with TINYTORCH_WERROR) and sanitizers for one of our own targets. A switch
# over an enum that misses a value is always an error, CUDA host code included: the op switches
# generated from backend/op_table.h have no `default:`, so a forgotten op stops the build
# (Note [op tables]).
function(tt_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror=switch>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror=switch>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TINYTORCH_WERROR}>>:-Werror>)
  if(TINYTORCH_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${TINYTORCH_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
    target_link_options(${target} PUBLIC -fsanitize=${TINYTORCH_SANITIZE})
  endif()
endfunction()

# tt_add_test(NAME name SOURCES a.cpp ... [LABELS l ...]): a Catch2 executable whose test cases
# CTest discovers one by one. Exit code 77 means "skipped" (CUDA tests without a GPU).
function(tt_add_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  # OpenMP directly too: tests set thread counts (omp_set_num_threads) to prove determinism.
  target_link_libraries(${ARG_NAME} PRIVATE tinytorch::tinytorch tt_catch_main OpenMP::OpenMP_CXX)
  target_compile_definitions(${ARG_NAME} PRIVATE TT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(${ARG_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  tt_target_defaults(${ARG_NAME})
  catch_discover_tests(${ARG_NAME}
    TEST_PREFIX "${ARG_NAME}:"
    PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77
    DISCOVERY_TIMEOUT 60)
endfunction()

# tt_add_module(NN name): modules/NN_name/{walkthrough.cpp, test_NN_name.cpp}
# -> executables walkthrough_NN and test_NN_name (CTest label moduleNN).
function(tt_add_module num name)
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}/${num}_${name}")
  add_executable(walkthrough_${num} "${dir}/walkthrough.cpp")
  target_link_libraries(walkthrough_${num} PRIVATE tinytorch::tinytorch)
  tt_target_defaults(walkthrough_${num})
  tt_add_test(NAME test_${num}_${name} SOURCES "${dir}/test_${num}_${name}.cpp" LABELS module${num})
endfunction()
