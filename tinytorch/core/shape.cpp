// Shape helpers: printing, numel, strides, dim wrapping and broadcasting.
#include "tinytorch/core/shape.h"

namespace tt {

Shape Shape::filled(int n, int64_t value) {
  Shape s;
  s.resize(n, value);
  return s;
}

void Shape::insert(int pos, int64_t v) {
  TT_CHECK_SHAPE(n_ < kMaxDims, "Shape: at most ", kMaxDims, " dimensions are supported");
  for (int i = n_; i > pos; --i) d_[i] = d_[i - 1];
  d_[pos] = v;
  ++n_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
  --n_;
}

void Shape::resize(int n, int64_t fill) {
  TT_CHECK_SHAPE(n >= 0 && n <= kMaxDims, "Shape: at most ", kMaxDims,
                 " dimensions are supported, got ", n);
  for (int i = n_; i < n; ++i) d_[i] = fill;
  n_ = n;
}

bool Shape::operator==(const Shape& o) const {
  if (n_ != o.n_) return false;
  for (int i = 0; i < n_; ++i)
    if (d_[i] != o.d_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (int i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

int64_t numel_of(const Shape& shape) {
  // The zero first: an empty tensor may have other sizes whose product alone passes int64
  // ([2^32, 2^32, 0]). For a tensor with elements the product fits (Note [checked sizes]).
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st;
  st.resize(shape.size());
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    st[i] = acc;
    // A size of 0 counts as 1, as in PyTorch. The product then fits in int64 for every tensor with
    // elements (Note [checked sizes]); for an empty one ([0, 2^62, 4]) it may not, and since no
    // element is ever addressed it saturates instead of wrapping into a negative stride.
    if (__builtin_mul_overflow(acc, shape[i] > 0 ? shape[i] : 1, &acc)) acc = INT64_MAX;
  }
  return st;
}

int wrap_dim(int64_t dim, int ndim, const char* op) {
  int64_t n = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  TT_CHECK_INDEX(dim >= -n && dim < n, op, ": dimension out of range (expected to be in range of [",
                 -n, ", ", n - 1, "], but got ", dim, ")");
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = a.size() > b.size() ? a.size() : b.size();
  Shape out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    int ia = a.size() - n + i, ib = b.size() - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    TT_CHECK_SHAPE(da == db || da == 1 || db == 1, op,
                   ": shapes cannot be broadcast together, sizes must match or be 1 at each "
                   "dimension from the right, got ",
                   a, " and ", b);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  Shape out;
  out.resize(target.size());
  int off = target.size() - shape.size();
  for (int i = 0; i < target.size(); ++i) {
    int j = i - off;
    out[i] = (j < 0 || shape[j] == 1) ? 0 : strides[j];
  }
  return out;
}

}  // namespace tt
