// Elementwise ops with broadcasting and type promotion: arithmetic, comparisons, unary math,
// where, and their in-place forms. Each op is a row of the tables in core/op_table.h.
#pragma once

#include "tinytorch/core/op_table.h"
#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// Result dtype of a binary op, as PyTorch decides it (a scalar operand does not widen a
// tensor of the same category: float32 tensor + 2.5 stays float32).
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, Scalar b);

// add, sub, mul, div (true division: integers give float32), pow, maximum, minimum and the
// comparisons, of two tensors or of a tensor and a scalar.
// Unary math: one function per row of TT_UNARY_OPS in core/op_table.h, Tensor fn(const
// Tensor& a) for tt::exp, tt::log, tt::sqrt, tt::relu and the rest; the table lists them all
// with their dtype rule. Floating ops turn integer and bool inputs into float32 first, as
// PyTorch does; NoBool ops (neg, abs, relu) keep the dtype and refuse bool.

// where(cond, a, b): cond ? a : b, broadcasting all three. cond must be bool.
// The declarations: the rows of TT_OPS_ELEMENTWISE (core/op_registry.h), in core/op_declarations.h.

namespace detail {
// An elementwise op by its table row (core/op_table.h): detail::unary(UnaryOp::Exp, x) is
// exp(x), detail::binary(BinaryOp::Mul, a, b) is mul(a, b). For code that iterates the tables.
Tensor unary(UnaryOp op, const Tensor& a);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
// In-place forms behind Tensor::add_, mul_, ... : type-checked, version-bumping.
bool can_cast(ScalarType from, ScalarType to);
// Throws DtypeError when either operand of a subtraction is bool (PyTorch's rule).
void check_sub_dtypes(ScalarType a, ScalarType b);
Tensor& binary_inplace(BinaryOp op, Tensor& self, const Tensor& other);
Tensor& binary_inplace(BinaryOp op, Tensor& self, Scalar other);
Tensor& unary_inplace(UnaryOp op, Tensor& self);
}  // namespace detail

}  // namespace tt
