// embedding: checks (dtype, shape, every index in range: here on the CPU, in the kernel on a GPU);
// the row copy is the backend's index_select along dim 0, the gradient is scatter_add (both in
// backend/*/index).
#include "tinytorch/ops/embedding.h"

#include <vector>

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/backend/device_error.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace {

using autograd::SavedVariable;
using autograd::TensorList;

// Note [embedding index check]
// On the CPU every index is checked once, before any kernel runs: min and max are two reductions
// and two scalar reads. Only when a bound fails is the position of the first bad index searched
// for, so the cost of a precise message is paid by bad input alone. On a GPU the two scalar reads
// would be a host sync per forward; there the index_select kernel checks each index as it reads
// it, never reads outside the table, and records the first bad one for the next synchronization
// to report as an embedding error (Note [device error flag] in backend/device_error.h). PyTorch's
// kernel asserts instead, which poisons the CUDA context.
void check_indices(const Tensor& flat, int64_t V) {
  if (flat.numel() == 0 || !flat.device().is_cpu()) return;
  int64_t lo = min(flat).item<int64_t>(), hi = max(flat).item<int64_t>();
  if (lo >= 0 && hi < V) return;
  std::vector<int64_t> v = flat.to_vector<int64_t>();
  size_t pos = 0;
  while (pos + 1 < v.size() && v[pos] >= 0 && v[pos] < V) ++pos;
  TT_CHECK_INDEX(false, "embedding: index ", v[pos], " at position ", pos,
                 " of the flattened indices is out of range for a table of ", V,
                 " rows; indices must be in [0, ", V, ")");
}

// d out / d weight: each upstream row is added into the row it was read from (scatter_add; a
// repeated index accumulates), with the rows that read padding_idx masked out first. Written
// with tensor ops, so it runs on any device and is itself differentiable (double backward).
struct Embedding {
  static constexpr const char* kName = "EmbeddingBackward0";
  struct Saved {
    SavedVariable indices;  // int64 [N], flattened
    int64_t num_rows = 0;
    int64_t padding_idx = -1;  // wrapped into [0, V), or -1 for none
  };
  // weight: [V, E], flat: int64 [N] (checked) -> [*, E] (out_shape): row i is weight[flat[i]].
  static Tensor forward(const Tensor& weight, const Tensor& flat, const Shape& out_shape) {
    // TT_EXERCISE_BEGIN(10, 1)
    Tensor out = empty(out_shape, weight.options());
    if (out.numel())
      backend_for(weight.device()).index_select(view(out, {flat.numel(), weight.size(1)}), weight, 0, flat);
    return out;
    // TT_EXERCISE_END
  }
  // g: [*, E] -> [V, E]
  static TensorList backward(const Saved& s, const TensorList& g) {
    // TT_EXERCISE_BEGIN(10, 2)
    Tensor idx = s.indices.unpack();
    int64_t E = g[0].size(-1);
    Tensor g2 = reshape(g[0], {idx.numel(), E});  // [N, E]
    if (s.padding_idx >= 0) g2 = masked_fill(g2, unsqueeze(idx == Scalar(s.padding_idx), 1), 0.0);
    Tensor rows = expand(unsqueeze(idx, 1), {idx.numel(), E});  // [N, E]: row i of g2 goes to rows[i]
    return {scatter_add(zeros({s.num_rows, E}, g[0].options()), 0, rows, g2)};
    // TT_EXERCISE_END
  }
};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  TT_CHECK_DTYPE(indices.dtype() == kInt64, "embedding: expected int64 indices, got dtype ", indices.dtype(),
                 weight.dtype() == kInt64 ? " (the arguments are embedding(weight, indices), as torch.embedding)" : "");
  TT_CHECK_SHAPE(weight.dim() == 2, "embedding: expected a weight of shape [num_embeddings, embedding_dim], got ",
                 weight.shape());
  detail::check_same_device("embedding", {&weight, &indices});
  const int64_t V = weight.size(0), E = weight.size(1);
  int64_t pad = -1;
  if (padding_idx) {
    TT_CHECK_INDEX(*padding_idx >= -V && *padding_idx < V, "embedding: padding_idx must be within [", -V, ", ",
                   V, ") for a table of ", V, " rows, got ", *padding_idx);
    pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
  }
  Tensor flat = reshape(indices.detach(), {indices.numel()});  // [N]
  check_indices(flat, V);
  Shape out_shape = indices.shape();
  out_shape.push_back(E);
  Tensor out;
  {
    detail::DeviceErrorScope device_errors(DeviceErrorOp::kEmbedding);
    out = Embedding::forward(weight, flat, out_shape);
  }
  if (auto node = autograd::make_node<Embedding>({&weight})) {
    node->saved = {SavedVariable(flat), V, pad};
    autograd::set_history(out, node);
  }
  return out;
}

}  // namespace tt
