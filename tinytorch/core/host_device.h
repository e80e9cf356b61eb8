// TT_HOST_DEVICE: marks a function both backends call, on the host and (under nvcc) on the device.
#pragma once

#ifdef __CUDACC__
#define TT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TT_HOST_DEVICE inline
#endif
