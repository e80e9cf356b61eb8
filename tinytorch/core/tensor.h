// Tensor: the user-facing handle to an n-dimensional array.
//
// A Tensor is a cheap HANDLE: it holds a shared pointer to a TensorImpl. Copying a Tensor
// (`Tensor b = a;`) copies the pointer, not the data: `a` and `b` are the same tensor, and an
// in-place change through one is seen through the other. Use clone() for a deep copy.
// Views (transpose, slice, expand, view/reshape when possible, ...) are different TensorImpls
// that share one Storage, each with its own offset, shape and strides.
//
// The methods here are thin: they forward to the free functions in tinytorch/ops, which hold
// the math; kernels live behind the Backend seam (tinytorch/backend).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tinytorch/core/device.h"
#include "tinytorch/core/dtype.h"
#include "tinytorch/core/error.h"
#include "tinytorch/core/op_registry.h"
#include "tinytorch/core/scalar.h"
#include "tinytorch/core/shape.h"
#include "tinytorch/core/storage.h"
#include "tinytorch/core/tensor_options.h"

namespace tt {

class Tensor;
namespace autograd {
struct Node;
}

struct TensorImpl;

// Removes one hook registered with Tensor::register_post_accumulate_grad_hook. remove() is safe to
// call twice, and after the tensor is gone. Dropping the handle does NOT remove the hook.
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<TensorImpl> tensor, uint64_t id) : tensor_(std::move(tensor)), id_(id) {}
  void remove();

 private:
  std::weak_ptr<TensorImpl> tensor_;
  uint64_t id_ = 0;
};

struct TensorImpl {
  Storage storage;
  int64_t offset = 0;  // in elements, into storage
  Shape shape;
  Shape strides;       // in elements
  ScalarType dtype = kFloat32;
  // Autograd state (used by tinytorch/autograd; plain data here).
  bool requires_grad = false;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  bool retains_grad = false;
  bool is_view = false;  // made by a view op from another tensor's storage
  // Guards the three members below: threads sharing a leaf all reach them during their forward
  // and backward passes (Note [threads] in autograd/node.cpp).
  // Recursive: with create_graph, the addition into .grad records ops that may look up this very
  // leaf's accumulator again (x.backward(x, false, true) on a leaf x).
  mutable std::recursive_mutex autograd_mutex;
  std::shared_ptr<TensorImpl> grad;
  std::weak_ptr<autograd::Node> grad_accumulator;  // a leaf's AccumulateGrad, shared by its uses
  // Hooks of a leaf, run on its gradient before it is accumulated (register_hook).
  std::vector<std::function<Tensor(const Tensor&)>> hooks;
  // Hooks of a leaf run after a gradient has been added into .grad, with the leaf itself
  // (register_post_accumulate_grad_hook), keyed by the id their HookHandle removes.
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- metadata -----------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& sizes() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int dim() const { return impl().shape.size(); }
  int64_t numel() const { return numel_of(impl().shape); }
  ScalarType dtype() const { return impl().dtype; }
  ScalarType scalar_type() const { return impl().dtype; }
  Device device() const { return impl().storage->device; }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  int64_t storage_offset() const { return impl().offset; }
  size_t element_size() const { return tt::element_size(dtype()); }
  bool is_contiguous() const;
  bool is_floating_point() const { return tt::is_floating_point(dtype()); }
  bool is_cuda() const { return device().is_cuda(); }
  const Storage& storage() const { return impl().storage; }
  uint64_t version() const { return impl().storage->version.load(std::memory_order_relaxed); }
  void bump_version() const { impl().storage->version.fetch_add(1, std::memory_order_relaxed); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // --- data access ----------------------------------------------------------------------
  // data_ptr<T>() points at the first element (storage + offset); T must match dtype().
  template <typename T>
  T* data_ptr() const;
  void* raw_data_ptr() const;
  // item<T>() reads a one-element tensor (copying from the GPU if needed), converting to T.
  template <typename T>
  T item() const;
  Scalar item() const;
  template <typename T>
  std::vector<T> to_vector() const;  // all elements in row-major order, as T

  // --- autograd (tinytorch/autograd) -------------------------------------------------------
  bool requires_grad() const { return impl().requires_grad; }
  // Only leaves (tensors no op produced) may change their flag.
  Tensor& requires_grad_(bool r = true);
  // The accumulated gradient of a leaf (or of a non-leaf after retain_grad()); undefined until
  // a backward reaches it. Gradients ADD UP across backward calls: clear them with
  // set_grad(Tensor()) (the "set to none" way, as PyTorch's zero_grad() does by default) or
  // grad().zero_() between steps. Read it once the backward passes that feed it are over: the
  // handle is read under the leaf's lock, the values it points at are not.
  Tensor grad() const;
  // Replaces the gradient: g must have this tensor's shape, dtype and device (ShapeError,
  // DtypeError, DeviceError otherwise), or be undefined to clear it.
  void set_grad(const Tensor& g) const;
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  // Runs backward from this tensor (a one-element tensor unless `gradient` is given).
  // With create_graph=true a leaf's .grad carries a graph that refers back to the leaf: a
  // reference cycle (as in PyTorch), freed only once the grad is cleared with set_grad(Tensor()).
  // Prefer autograd::grad(..., create_graph=true), which stores nothing on the leaves.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false, bool create_graph = false) const;
  // fn sees (and may replace, by returning a defined tensor) this tensor's gradient during backward.
  void register_hook(std::function<Tensor(const Tensor&)> fn) const;
  // Keeps the gradient of a non-leaf in grad() after backward.
  void retain_grad() const;
  // fn(leaf) runs each time a backward has added a gradient into this leaf's .grad, on the thread
  // running that backward, after the addition (fn reads the sum in leaf.grad()). The hook is kept
  // on the tensor, so it survives the graphs being rebuilt every step; remove it through the handle.
  // Only leaves that require grad (parameters) have one: anything else throws. This is the seam
  // DistributedDataParallel starts its all-reduces from (Note [post-accumulate hooks]).
  HookHandle register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const;
  Tensor detach() const;  // same storage, no autograd history
  // Makes this leaf refer to new_data's storage, offset, shape, strides and dtype while staying the
  // same TensorImpl (so every handle, optimizer and module holding it sees the change). This is
  // how Module::to(dtype|device) converts parameters in place, as PyTorch's `param.data = ...`.
  // The gradient is dropped when the dtype, device or shape changes.
  void set_data(const Tensor& new_data) const;

  // --- conversion and copies ------------------------------------------------------------
  Tensor to(Device d, bool copy = false) const;
  Tensor to(DeviceType d, bool copy = false) const { return to(Device(d), copy); }  // t.to(kCUDA)
  Tensor to(const TensorOptions& o, bool copy = false) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda(int index = 0) const { return to(Device(kCUDA, index)); }
  Tensor& zero_() { return fill_(0); }

  // --- views not in the registry -------------------------------------------------------------
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor operator[](int64_t index) const { return select(0, index); }

  // --- the ops, as methods: x.sum(1, true) is tt::sum(x, 1, true) ----------------------------------
  // One method for every Method / MethodMut / MethodF row of core/op_registry.h (views, copies,
  // splits, indexing, elementwise math, softmax, reductions, matrix products), taking the op's
  // parameters after self with the same defaults; each calls tt::name (ops/tensor_methods.cpp).
  // A dims argument takes {0, 2}, a Shape or one dim. The Own / OwnMut rows are methods only:
  // to(dtype, copy) and the in-place arithmetic (add_, sub_, mul_, div_, neg_, exp_, relu_),
  // which write into this tensor (and every view of its storage) and bump its version.
  TT_OPS(TT_DECLARE_METHOD)

 private:
  TensorImpl& impl() const {
    TT_CHECK(impl_ != nullptr, "Tensor: this tensor is undefined (default-constructed)");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

// Printing like PyTorch: tensor([[1.0000, 2.0000], ...], dtype=float64). Large tensors are
// summarized with "...". Defined in ops/print.cpp.
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

// --- operators (elementwise, broadcasting) ----------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Elementwise comparisons returning bool tensors (as in LibTorch).
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);

// --- template definitions ----------------------------------------------------------------
template <typename T>
T* Tensor::data_ptr() const {
  TT_CHECK_DTYPE(dtype() == dtype_of<T>::value, "data_ptr: requested ", dtype_of<T>::value,
                 " but the tensor has dtype ", dtype());
  return static_cast<T*>(raw_data_ptr());
}

template <typename T>
T Tensor::item() const {
  return item().to<T>();
}

template <>
inline bool Tensor::item<bool>() const {
  Scalar s = item();
  return s.is_floating_point() ? s.to<double>() != 0.0 : s.to<int64_t>() != 0;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(Device(kCPU)).to(dtype_of<T>::value).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace tt
