// cuBLAS and cuBLASLt, opened on first use: tt::cuda::lib::cublas() and lib::cublaslt() hold the
// functions the backend calls, looked up once in the library files. Call them as
//   TT_CUBLAS_CHECK(lib::cublas().cublasGemmEx(handle, ...));
// This header declares the tables only; the kernels that use them live in gemm.cu and linear.cu.
//
// Note [CUDA libraries on first use]
// A program that links cuBLAS pays for it before main, GPU or not: the dynamic loader maps and
// relocates libcublas (54 MB) and libcublasLt (540 MB), 0.3-0.5 s on the 2-core machines, against
// 12 ms for an empty program (an empty main linked to each, timed on the 2-core EPYC). Every test
// case runs in a process of its own, so a CUDA-enabled build paid that about 1100 times a suite.
// So tinytorch links none of them. The CUDA runtime is linked in statically (CUDA::cudart_static:
// it opens the driver, libcuda, only at the first CUDA call), and cuBLAS, cuBLASLt and NCCL
// (distributed/nccl_library.h) are opened with dlopen the first time a CUDA device needs them.
// A run that never asks for a GPU loads no CUDA library at all (tests/cuda/test_libraries.cpp
// checks the process's own memory map). Each library is looked up first in the folder CMake found
// it in when tinytorch was built, then by its versioned file name (LD_LIBRARY_PATH, ldconfig's
// cache). When neither loads, the first CUDA op that needs it throws a tt::Error that names the
// library, each file tried and the loader's reason; the CPU is untouched and keeps working.
// The tables below are X-macro lists: a function called through lib::cublas() that is not in
// the list fails to compile, and one the library file lacks fails at load with its name.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>
#include <type_traits>

// The functions of each library that tinytorch calls, by their exported names (cublas_v2.h
// renames cublasCreate to cublasCreate_v2 and so on; a call written lib::cublas().cublasCreate(...)
// is renamed the same way, so both spellings reach the same member). Each member's type comes from
// the header's declaration, so a call with the wrong arguments fails to compile.
#define TT_CUBLAS_PLAIN_FUNCTIONS(X) \
  X(cublasCreate_v2)                 \
  X(cublasSetStream_v2)              \
  X(cublasSetMathMode)               \
  X(cublasDgemm_v2)                  \
  X(cublasDgemmStridedBatched)       \
  X(cublasGetStatusName)             \
  X(cublasGetStatusString)
// Overloaded in C++ (an inline wrapper takes the older cudaDataType compute type): their members
// name the exported form, which takes a cublasComputeType_t (types spelled out below).
#define TT_CUBLAS_FUNCTIONS(X)  \
  TT_CUBLAS_PLAIN_FUNCTIONS(X)  \
  X(cublasGemmEx)               \
  X(cublasGemmStridedBatchedEx)

#define TT_CUBLASLT_FUNCTIONS(X)           \
  X(cublasLtCreate)                        \
  X(cublasLtMatmul)                        \
  X(cublasLtMatmulDescCreate)              \
  X(cublasLtMatmulDescDestroy)             \
  X(cublasLtMatmulDescSetAttribute)        \
  X(cublasLtMatrixLayoutCreate)            \
  X(cublasLtMatrixLayoutDestroy)           \
  X(cublasLtMatmulPreferenceCreate)        \
  X(cublasLtMatmulPreferenceDestroy)       \
  X(cublasLtMatmulPreferenceSetAttribute)  \
  X(cublasLtMatmulAlgoGetHeuristic)

namespace tt::cuda::lib {

#define TT_LIB_TYPE(f) using f##_fn = decltype(&::f);
TT_CUBLAS_PLAIN_FUNCTIONS(TT_LIB_TYPE)
TT_CUBLASLT_FUNCTIONS(TT_LIB_TYPE)
#undef TT_LIB_TYPE
using cublasGemmEx_fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                           cublasGemmAlgo_t);
using cublasGemmStridedBatchedEx_fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                                         int, int, const void*, const void*, cudaDataType, int,
                                                         long long int, const void*, cudaDataType, int, long long int,
                                                         const void*, void*, cudaDataType, int, long long int, int,
                                                         cublasComputeType_t, cublasGemmAlgo_t);
// Both spelled-out types name an overload the header declares (else these fail to compile).
static_assert(std::is_same<decltype(static_cast<cublasGemmEx_fn>(&::cublasGemmEx)), cublasGemmEx_fn>::value,
              "cublasGemmEx's exported form");
static_assert(std::is_same<decltype(static_cast<cublasGemmStridedBatchedEx_fn>(&::cublasGemmStridedBatchedEx)),
                           cublasGemmStridedBatchedEx_fn>::value,
              "cublasGemmStridedBatchedEx's exported form");

#define TT_LIB_MEMBER(f) f##_fn f = nullptr;
struct Cublas {
  TT_CUBLAS_FUNCTIONS(TT_LIB_MEMBER)
};
struct CublasLt {
  TT_CUBLASLT_FUNCTIONS(TT_LIB_MEMBER)
};
#undef TT_LIB_MEMBER

// The tables, loaded on the first call (thread-safe); each throws tt::Error when its library
// cannot be loaded or lacks a function, and tries again on the next call.
const Cublas& cublas();
const CublasLt& cublaslt();

// The file each library was loaded from, or "" while it is not loaded (tt doctor, tests).
std::string cublas_path();
std::string cublaslt_path();

}  // namespace tt::cuda::lib
