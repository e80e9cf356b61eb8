# Helpers shared by the library, its tests and the curriculum.
include_guard(GLOBAL)

# Warnings (and -Werror with TINYTORCH_WERROR) and sanitizers for one of our own targets. A switch
# over an enum that misses a value is always an error, CUDA host code included: the op switches
# generated from core/op_table.h have no `default:`, so a forgotten op stops the build
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

# Note [test optimization]: a suite's own code (its Catch2 cases, fixture parsing, the reference
# runners) is compiled at TINYTORCH_TEST_OPT, -O0 by default, whatever the build type. The work a
# test measures runs in the library, which keeps the build type's flags (-O3 in Release), so the
# suites run about as fast, and their build, most of a clean build on two cores, takes about half
# the time: at -O3 most of a test file's compile time goes to optimizing Catch2's expanded
# assertions. The shipped programs (walkthroughs, examples, milestones, tools) keep the build
# type's flags. The flag comes after the build type's on the command line, so it wins.
function(tt_test_optimization target)
  if(TINYTORCH_TEST_OPT)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${TINYTORCH_TEST_OPT}>)
  endif()
endfunction()

# tt_nvidia_gpu_present(OUT): OUT is ON when this machine has an NVIDIA GPU that its driver sees:
# the driver's /proc/driver/nvidia/gpus lists one, WSL2's /dev/dxg exists, or `nvidia-smi -L`
# names one. TINYTORCH_CUDA=AUTO builds the CUDA backend only then.
function(tt_nvidia_gpu_present out)
  set(found OFF)
  file(GLOB gpus "/proc/driver/nvidia/gpus/*")
  if(gpus OR EXISTS "/dev/dxg")
    set(found ON)
  else()
    find_program(TINYTORCH_NVIDIA_SMI nvidia-smi)
    if(TINYTORCH_NVIDIA_SMI)
      execute_process(COMMAND "${TINYTORCH_NVIDIA_SMI}" -L OUTPUT_VARIABLE listed RESULT_VARIABLE rc
                      ERROR_QUIET TIMEOUT 20)
      if(rc EQUAL 0 AND listed MATCHES "GPU [0-9]")
        set(found ON)
      endif()
    endif()
  endif()
  set(${out} ${found} PARENT_SCOPE)
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
  tt_test_optimization(${ARG_NAME})
  catch_discover_tests(${ARG_NAME}
    TEST_PREFIX "${ARG_NAME}:"
    PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77
    DISCOVERY_TIMEOUT 60)
endfunction()

# tt_add_module(NN name [MPI]): modules/NN_name/{walkthrough.cpp, test_NN_name.cpp}
# -> executables walkthrough_NN and test_NN_name (CTest label moduleNN). With MPI the suite is a
# tt_add_mpi_test: run alone and under `mpiexec -np 2`.
function(tt_add_module num name)
  cmake_parse_arguments(ARG "MPI" "" "" ${ARGN})
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}/${num}_${name}")
  add_executable(walkthrough_${num} "${dir}/walkthrough.cpp")
  target_link_libraries(walkthrough_${num} PRIVATE tinytorch::tinytorch)
  tt_target_defaults(walkthrough_${num})
  if(ARG_MPI)
    tt_add_mpi_test(NAME test_${num}_${name} SOURCES "${dir}/test_${num}_${name}.cpp" LABELS module${num})
  else()
    tt_add_test(NAME test_${num}_${name} SOURCES "${dir}/test_${num}_${name}.cpp" LABELS module${num})
  endif()
  tt_add_readme_check(${num} "${dir}/README.md" walkthrough_${num})
endfunction()

# tt_add_readme_check(NN readme walkthrough_target): when the README holds "```text tt-check: ARGS"
# blocks, the test readme_NN (labels moduleNN and readme) runs cmake/CheckReadme.cmake on it, which
# runs the walkthrough with each block's ARGS and fails on any block line missing from its output.
# A setup test first brings the walkthrough up to date, so `ctest -L moduleNN` never checks a README
# against a stale binary. A walkthrough stopped by an exercise stub skips the check.
# TINYTORCH_CHECK_READMES=OFF leaves them out (an exercise copy, which judges only the learner's
# code, need not build the walkthroughs).
option(TINYTORCH_CHECK_READMES "Test the numbers module READMEs quote against their walkthroughs" ON)
function(tt_add_readme_check num readme walkthrough)
  if(NOT TINYTORCH_CHECK_READMES OR NOT EXISTS "${readme}")
    return()
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${readme}")  # a new block registers
  file(STRINGS "${readme}" blocks REGEX "^ *```text tt-check:")
  if(NOT blocks)
    return()
  endif()
  tt_add_walkthrough_build_test(${num} ${walkthrough})
  add_test(NAME readme_${num}
    COMMAND "${CMAKE_COMMAND}" "-DREADME=${readme}" "-DWALKTHROUGH=$<TARGET_FILE:${walkthrough}>"
            "-DNAME=${walkthrough}" -P "${PROJECT_SOURCE_DIR}/cmake/CheckReadme.cmake")
  set_tests_properties(readme_${num} PROPERTIES
    FIXTURES_REQUIRED readme_${num}_built LABELS "module${num};readme" TIMEOUT 300
    SKIP_REGULAR_EXPRESSION "exercise [0-9]+: stub of")
endfunction()

# tt_add_walkthrough_build_test(NN walkthrough_target): the test readme_NN_build, which builds the
# walkthrough, and the fixture readme_NN_built that tests running it require. Once per module.
function(tt_add_walkthrough_build_test num walkthrough)
  if(TEST readme_${num}_build)
    return()
  endif()
  add_test(NAME readme_${num}_build
    COMMAND "${CMAKE_COMMAND}" --build "${PROJECT_BINARY_DIR}" --target ${walkthrough} --config $<CONFIG>)
  # Two builds in one build tree at once would trip over each other.
  set_tests_properties(readme_${num}_build PROPERTIES
    FIXTURES_SETUP readme_${num}_built RESOURCE_LOCK tt_build_tree LABELS "module${num};readme")
endfunction()

# tt_mpi_environment(VAR): the environment of a test that runs `mpiexec -np N`, as a list in VAR.
# Ranks as root need OpenMPI's consent; more ranks than cores need oversubscription; one
# OpenMP/BLAS thread per rank (mpirun binds each rank to one core).
# Under AddressSanitizer, LeakSanitizer is off for the ranks (ASan's memory checks stay on):
# OpenMPI never frees what MPI_Init allocates (about 120 KB in 3,300 allocations per rank,
# measured), mostly inside plugins it has unloaded by the time LSan reports, so no suppression
# can name them. Tests that start no MPI keep leak checking.
function(tt_mpi_environment var)
  set(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
          OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive)
  if(TINYTORCH_SANITIZE MATCHES "address")
    list(APPEND env LSAN_OPTIONS=detect_leaks=0)
  endif()
  set(${var} "${env}" PARENT_SCOPE)
endfunction()

# tt_add_mpi_test(NAME name SOURCES a.cpp ... [LABELS l ...] [RANKS n ...]): a Catch2 executable
# whose main (tests/mpi_main.cpp) joins the MPI job it was started in, for suites that need several
# processes. CTest runs it whole: `name_alone` without mpirun (a world of one), and `name_npN` under
# `mpiexec -np N` for each N in RANKS (default 2). A failed test case on any rank ends the job with
# "rank R: ..." (no hang; the TIMEOUT is the backstop), and the job fails. Built without MPI, the
# npN tests report skipped (exit 77).
function(tt_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LABELS;RANKS" ${ARGN})
  if(NOT ARG_RANKS)
    set(ARG_RANKS 2)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE tinytorch::tinytorch tt_mpi_main OpenMP::OpenMP_CXX)
  target_compile_definitions(${ARG_NAME} PRIVATE TT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(${ARG_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  tt_target_defaults(${ARG_NAME})
  tt_test_optimization(${ARG_NAME})
  tt_mpi_environment(env)
  add_test(NAME ${ARG_NAME}_alone COMMAND ${ARG_NAME})
  set_tests_properties(${ARG_NAME}_alone PROPERTIES LABELS "${ARG_LABELS};mpi" TIMEOUT 300
    ENVIRONMENT "OMP_NUM_THREADS=1;OMP_WAIT_POLICY=passive")
  foreach(n IN LISTS ARG_RANKS)
    if(TINYTORCH_HAS_MPI)
      add_test(NAME ${ARG_NAME}_np${n} COMMAND "${TINYTORCH_MPIEXEC}" -np ${n} $<TARGET_FILE:${ARG_NAME}>)
    else()
      add_test(NAME ${ARG_NAME}_np${n} COMMAND ${ARG_NAME} --tt-skip-without-mpi)
    endif()
    set_tests_properties(${ARG_NAME}_np${n} PROPERTIES LABELS "${ARG_LABELS};mpi" TIMEOUT 300 PROCESSORS ${n}
      SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
  endforeach()
endfunction()
