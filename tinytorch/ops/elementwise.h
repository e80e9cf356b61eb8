// Elementwise ops with broadcasting and type promotion: arithmetic, comparisons, unary math,
// where, and their in-place forms. Each op is a row of the tables in backend/op_table.h.
#pragma once

#include "tinytorch/backend/op_table.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// Result dtype of a binary op, as PyTorch decides it (a scalar operand does not widen a
// tensor of the same category: float32 tensor + 2.5 stays float32).
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, Scalar b);

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);

// Unary math: one function per row of TT_UNARY_OPS in backend/op_table.h, Tensor fn(const
// Tensor& a) for tt::exp, tt::log, tt::sqrt, tt::relu and the rest; the table lists them all
// with their dtype rule. Floating ops turn integer and bool inputs into float32 first, as
// PyTorch does; NoBool ops (neg, abs, relu) keep the dtype and refuse bool.
#define TT_UNARY_DECLARATION(Enum, fn, ...) Tensor fn(const Tensor& a);
TT_UNARY_OPS(TT_UNARY_DECLARATION)
#undef TT_UNARY_DECLARATION

// cond ? a : b, broadcasting all three. cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);

namespace detail {
// An elementwise op by its table row (backend/op_table.h): detail::unary(UnaryOp::Exp, x) is
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
