# cmake -P script behind the install tests: builds one consumer project from scratch and runs it.
#   -DSOURCE_DIR=...  -DBINARY_DIR=...     the consumer project and its (emptied) build folder
#   -DGENERATOR=... -DBUILD_TYPE=... -DCXX_COMPILER=... [-DCXX_LAUNCHER=ccache]
#   -DINSTALL_FROM=<build tree> -DPREFIX=<dir>   optional: `cmake --install` the build tree into
#                                                PREFIX first, and point find_package at it
#   -DOPTIONS=-DA=1|-DB=2                        optional: more configure options, '|'-separated
cmake_minimum_required(VERSION 3.24)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc})")
  endif()
endfunction()

set(configure_options -G "${GENERATOR}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
                      "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(CXX_LAUNCHER)
  list(APPEND configure_options "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}")
endif()
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${PREFIX}")
  run("cmake --install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}"
      --config "${BUILD_TYPE}")
  list(APPEND configure_options "-DCMAKE_PREFIX_PATH=${PREFIX}")
endif()
if(OPTIONS)
  string(REPLACE "|" ";" extra "${OPTIONS}")
  list(APPEND configure_options ${extra})
endif()

file(REMOVE_RECURSE "${BINARY_DIR}")
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" ${configure_options})
run("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --config "${BUILD_TYPE}")
find_program(consumer consumer PATHS "${BINARY_DIR}" "${BINARY_DIR}/${BUILD_TYPE}" NO_DEFAULT_PATH REQUIRED)
run("the consumer program" "${consumer}")
