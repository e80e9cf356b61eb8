// Shape: a short list of sizes (or strides) held inline, with no heap allocation, plus the
// helpers every op uses: numel, contiguous strides, dim wrapping, broadcasting.
// A tensor has at most kMaxDims dimensions; asking for more is a clear ShapeError.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "tinytorch/core/error.h"

namespace tt {

constexpr int kMaxDims = 16;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT
  template <typename It>
  Shape(It first, It last) { assign(first, last); }
  static Shape filled(int n, int64_t value);

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](int i) { return d_[i]; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  const int64_t* data() const { return d_; }
  int64_t back() const { return d_[n_ - 1]; }
  void push_back(int64_t v) {
    TT_CHECK_SHAPE(n_ < kMaxDims, "Shape: at most ", kMaxDims, " dimensions are supported");
    d_[n_++] = v;
  }
  void insert(int pos, int64_t v);
  void erase(int pos);
  void resize(int n, int64_t fill = 0);
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  template <typename It>
  void assign(It first, It last) {
    n_ = 0;
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }
  int64_t d_[kMaxDims] = {};
  int n_ = 0;
};

// The dims a reduction covers, as an argument: a braced list ({0, 2}), a Shape, or one dim alone,
// so x.sum(1), x.mean(-1, /*keepdim=*/true) and x.amax({0, 1}) all read as in LibTorch, whose
// IntArrayRef takes a single int64_t too. An empty list means every dim.
struct DimList {
  DimList() = default;
  DimList(int64_t dim) : dims{dim} {}                           // NOLINT: one dim, as LibTorch
  DimList(std::initializer_list<int64_t> list) : dims(list) {}  // NOLINT
  DimList(const Shape& list) : dims(list) {}                    // NOLINT
  DimList(const std::vector<int64_t>& list) : dims(list) {}     // NOLINT
  Shape dims;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);  // [2, 3]

// The element count of a tensor's shape, unchecked: every tensor's shape was checked when it was
// made (core/checked.h). For sizes from a user, use checked_numel.
int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
int wrap_dim(int64_t dim, int ndim, const char* op);
// PyTorch broadcasting: align from the right, sizes must match or be 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Strides that view a tensor of `shape`/`strides` as `target` (stride 0 on broadcast dims).
Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target);

}  // namespace tt
