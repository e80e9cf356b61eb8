// Checked size arithmetic: element counts, byte counts, stride extents and index sums that throw a
// ShapeError naming the op and the operands instead of wrapping around. See Note [checked sizes].
#pragma once

#include <cstddef>
#include <cstdint>

#include "tinytorch/core/scalar.h"
#include "tinytorch/core/shape.h"

namespace tt {

// Note [checked sizes]
// ~~~~~~~~~~~~~~~~~~~~
// Every tensor the library creates passes detail::make_tensor, which checks its layout with the
// helpers below: sizes >= 0, an element count that fits in int64, strides >= 0, and elements that
// lie inside the storage. A tensor that exists is therefore valid, and code that reads one (numel(),
// a kernel's offset sum over its dims) may multiply without checking: every partial product is
// bounded by a count that was checked here. Code that computes sizes from *user* numbers (factory
// shapes, reshape targets, expand sizes, narrow bounds, a row count times a width) checks with
// these helpers before anything is allocated or indexed. An overflow is a ShapeError such as
//   zeros: the number of elements of sizes [4611686018427387903, 4] overflows int64
// never a negative numel, a short allocation or a write into another tensor's memory.
// PyTorch refuses the same inputs ("Storage size calculation overflowed").

// a * b and a + b, or a ShapeError "op: size arithmetic overflows int64: a * b".
int64_t checked_mul(int64_t a, int64_t b, const char* op);
int64_t checked_add(int64_t a, int64_t b, const char* op);

// The element count of `shape`: every size >= 0 and the product inside int64.
int64_t checked_numel(const Shape& shape, const char* op);

// The bytes of a contiguous tensor of `shape`: at most INT64_MAX, as PyTorch limits a storage.
size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op);

// Elements a strided layout spans from its first element: 0 when a size is 0, otherwise
// 1 + sum((size - 1) * stride). Strides must be >= 0 (tinytorch has no negative strides).
int64_t checked_extent(const Shape& shape, const Shape& strides, const char* op);

// A double that must become an element count (arange's length): finite, >= 0 and below 2^63.
int64_t checked_count(double n, const char* op);

// Throws unless `value` converts to `dtype` without overflow, as PyTorch's full and fill_ do:
// into int64 a floating value must be finite and inside [-2^63, 2^63) (it is truncated, 2.7 -> 2);
// into float32 a finite value must be at most FLT_MAX in magnitude (inf and NaN stay themselves).
void check_scalar_fits(Scalar value, ScalarType dtype, const char* op);

}  // namespace tt
