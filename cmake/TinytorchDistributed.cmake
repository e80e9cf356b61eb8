# Distributed training's communication libraries (tinytorch/distributed), chosen by
# TINYTORCH_DISTRIBUTED (AUTO, ON or OFF):
#   MPI   OpenMPI (Debian: openmpi-bin, libopenmpi-dev) through FindMPI, C bindings only
#         (MPI_CXX_SKIP_MPICXX: the deprecated C++ bindings are not wanted). Target tinytorch::mpi,
#         TINYTORCH_HAS_MPI. AUTO builds it when found; ON requires it.
#   NCCL  in the CUDA prefix (nccl.h, libnccl.so), when the CUDA backend is on; not linked but
#         opened at run time (distributed/nccl_library.h). No CMake package ships with it, so
#         find_path/find_library and an interface target tinytorch::nccl (its headers),
#         TINYTORCH_HAS_NCCL.
# Both targets are installed and exported with tinytorch (a static library passes its link
# dependencies on); TINYTORCH_DISTRIBUTED_TARGETS lists them for install(TARGETS).
include_guard(GLOBAL)

set(TINYTORCH_HAS_MPI OFF)
set(TINYTORCH_HAS_NCCL OFF)
set(TINYTORCH_DISTRIBUTED_TARGETS "")
if(NOT TINYTORCH_DISTRIBUTED MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TINYTORCH_DISTRIBUTED must be AUTO, ON or OFF, not '${TINYTORCH_DISTRIBUTED}'")
endif()

if(NOT TINYTORCH_DISTRIBUTED STREQUAL "OFF")
  set(MPI_CXX_SKIP_MPICXX ON)
  if(TINYTORCH_DISTRIBUTED STREQUAL "ON")
    find_package(MPI COMPONENTS CXX)
    if(NOT MPI_CXX_FOUND)
      message(FATAL_ERROR "TINYTORCH_DISTRIBUTED=ON but MPI was not found: install OpenMPI "
                          "(tools/tt setup, or apt-get install openmpi-bin libopenmpi-dev)")
    endif()
  else()
    find_package(MPI QUIET COMPONENTS CXX)
  endif()
  if(MPI_CXX_FOUND)
    set(TINYTORCH_HAS_MPI ON)
    add_library(tinytorch_mpi INTERFACE)
    add_library(tinytorch::mpi ALIAS tinytorch_mpi)
    target_link_libraries(tinytorch_mpi INTERFACE MPI::MPI_CXX)
    set_target_properties(tinytorch_mpi PROPERTIES EXPORT_NAME mpi)
    list(APPEND TINYTORCH_DISTRIBUTED_TARGETS tinytorch_mpi)
    # mpiexec for the multi-rank tests (tests/distributed, module 16).
    set(TINYTORCH_MPIEXEC "${MPIEXEC_EXECUTABLE}")
  endif()

  if(TINYTORCH_HAS_CUDA)
    find_path(TINYTORCH_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(TINYTORCH_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(TINYTORCH_NCCL_INCLUDE_DIR AND TINYTORCH_NCCL_LIBRARY)
      set(TINYTORCH_HAS_NCCL ON)
      add_library(tinytorch_nccl INTERFACE)
      add_library(tinytorch::nccl ALIAS tinytorch_nccl)
      # No link: libnccl is opened with dlopen when a process group first needs it (Note [CUDA
      # libraries on first use]); the folder it was found in is where tinytorch looks first.
      get_filename_component(TINYTORCH_NCCL_LIBRARY_DIR "${TINYTORCH_NCCL_LIBRARY}" DIRECTORY)
      target_include_directories(tinytorch_nccl INTERFACE $<BUILD_INTERFACE:${TINYTORCH_NCCL_INCLUDE_DIR}>)
      set_target_properties(tinytorch_nccl PROPERTIES EXPORT_NAME nccl)
      list(APPEND TINYTORCH_DISTRIBUTED_TARGETS tinytorch_nccl)
    endif()
  endif()
endif()
message(STATUS "tinytorch: distributed: MPI ${TINYTORCH_HAS_MPI}, NCCL ${TINYTORCH_HAS_NCCL}")
