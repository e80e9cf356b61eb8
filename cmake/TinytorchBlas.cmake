# Picks the BLAS tinytorch links, and gives it as the target tinytorch::blas (exported with the
# library, so a consumer links the same BLAS without finding it again). Note [threading policy]
# in tinytorch/backend/threads.cpp says why the OpenMP build of OpenBLAS is preferred.
#
#   (default)              OpenBLAS. Its OpenMP build (Debian: libopenblas0-openmp) when present,
#                          else whichever libopenblas the system links (Debian's default is the
#                          pthreads build: a warning says what that costs).
#   -DBLA_VENDOR=FLAME     BLIS (Debian: libblis-dev), through CMake's FindBLAS.
#   -DBLA_VENDOR=<other>   any vendor FindBLAS knows (Generic = the reference BLAS, ...); the
#                          library then needs only the standard CBLAS calls.
#
# Sets TINYTORCH_BLAS_VENDOR (OpenBLAS, BLIS or Other), TINYTORCH_BLAS_LIBRARIES (full paths)
# and TINYTORCH_CBLAS_INCLUDE_DIR (the folder with the matching cblas.h).
include_guard(GLOBAL)

set(TINYTORCH_OPENBLAS_OPENMP "AUTO" CACHE STRING
  "With OpenBLAS: link its OpenMP build (AUTO: when found; ON: required; OFF: the system default)")
set_property(CACHE TINYTORCH_OPENBLAS_OPENMP PROPERTY STRINGS AUTO ON OFF)

set(_tt_blas_user_vendor "")
set(_tt_blas_link_options "")
if(DEFINED BLA_VENDOR AND NOT BLA_VENDOR STREQUAL "OpenBLAS")
  set(_tt_blas_user_vendor "${BLA_VENDOR}")
endif()

# Debian keeps each OpenBLAS and BLIS build in its own folder (openblas-openmp/, blis-openmp/, ...)
# and points the plain names at one of them through update-alternatives.
set(_tt_arch_dirs /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})

if(_tt_blas_user_vendor)
  find_package(BLAS REQUIRED)
  set(TINYTORCH_BLAS_LIBRARIES ${BLAS_LIBRARIES} ${BLAS_LINKER_FLAGS})
  if(BLA_VENDOR STREQUAL "FLAME")
    set(TINYTORCH_BLAS_VENDOR BLIS)
    set(_tt_cblas_suffixes blis-openmp blis-pthread blis-serial blis)
  else()
    set(TINYTORCH_BLAS_VENDOR Other)
    set(_tt_cblas_suffixes "")
  endif()
else()
  set(TINYTORCH_BLAS_VENDOR OpenBLAS)
  set(_tt_openblas "")
  if(NOT TINYTORCH_OPENBLAS_OPENMP STREQUAL "OFF")
    find_library(TINYTORCH_OPENBLAS_OPENMP_LIBRARY NAMES openblas
      PATH_SUFFIXES openblas-openmp NO_CMAKE_SYSTEM_PATH NO_SYSTEM_ENVIRONMENT_PATH
      PATHS ${_tt_arch_dirs})
    # Only a library inside an openblas-openmp folder is the OpenMP build: the search above may
    # also see a plain libopenblas through CMAKE_LIBRARY_PATH.
    if(TINYTORCH_OPENBLAS_OPENMP_LIBRARY MATCHES "/openblas-openmp/")
      set(_tt_openblas "${TINYTORCH_OPENBLAS_OPENMP_LIBRARY}")
      set(_tt_cblas_suffixes openblas-openmp)
    elseif(TINYTORCH_OPENBLAS_OPENMP STREQUAL "ON")
      message(FATAL_ERROR "TINYTORCH_OPENBLAS_OPENMP=ON but OpenBLAS's OpenMP build was not found "
        "(Debian: apt-get install libopenblas-openmp-dev)")
    endif()
  endif()
  if(_tt_openblas)
    set(TINYTORCH_BLAS_LIBRARIES "${_tt_openblas}")
    # The OpenMP build shares libopenblas.so.0's soname with the pthreads one that Debian's plain
    # path points at: a DT_RPATH (which, unlike DT_RUNPATH, outranks LD_LIBRARY_PATH) makes the
    # programs load the build chosen here.
    set(_tt_blas_link_options "LINKER:--disable-new-dtags")
  else()
    set(BLA_VENDOR OpenBLAS)
    find_package(BLAS REQUIRED)
    set(TINYTORCH_BLAS_LIBRARIES ${BLAS_LIBRARIES} ${BLAS_LINKER_FLAGS})
    set(_tt_cblas_suffixes openblas-pthread openblas-openmp openblas)
    get_filename_component(_tt_real "${BLAS_LIBRARIES}" REALPATH)
    if(NOT _tt_real MATCHES "openblas-openmp")
      message(WARNING "tinytorch: linking OpenBLAS's pthreads build (${_tt_real}). Its thread pool "
        "and tinytorch's OpenMP threads compete for the cores: on 2 cores a GPT training step ran "
        "slower on 2 threads than on 1. Install the OpenMP build (Debian: libopenblas-openmp-dev; "
        "tools/tt setup does) and configure again. See Note [threading policy].")
    endif()
  endif()
endif()

find_path(TINYTORCH_CBLAS_INCLUDE_DIR cblas.h
  PATHS ${_tt_arch_dirs} /usr/include/aarch64-linux-gnu
  PATH_SUFFIXES ${_tt_cblas_suffixes}
  REQUIRED)
message(STATUS "tinytorch: BLAS ${TINYTORCH_BLAS_VENDOR}: ${TINYTORCH_BLAS_LIBRARIES} (cblas.h in ${TINYTORCH_CBLAS_INCLUDE_DIR})")

# An INTERFACE target (not IMPORTED) so that install(EXPORT) carries the chosen paths to consumers.
add_library(tinytorch_blas INTERFACE)
add_library(tinytorch::blas ALIAS tinytorch_blas)
target_link_libraries(tinytorch_blas INTERFACE ${TINYTORCH_BLAS_LIBRARIES})
if(_tt_blas_link_options)
  target_link_options(tinytorch_blas INTERFACE ${_tt_blas_link_options})
endif()
set_target_properties(tinytorch_blas PROPERTIES EXPORT_NAME blas)
