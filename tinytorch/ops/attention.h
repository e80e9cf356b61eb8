// Scaled dot-product attention: the functional form (F::scaled_dot_product_attention) with PyTorch
// 2's semantics, and attention_weights(), the same scores and softmax returned for inspection.
//
//   scores  = q @ k^T * scale + mask          [*, Hq, Tq, Tk]
//   weights = softmax(scores, dim = -1)       rows sum to 1 (0 for a row with nothing to attend to)
//   out     = dropout(weights) @ v            [*, Hq, Tq, Dv]
//
// Shapes: q [*, Hq, Tq, D], k [*, Hkv, Tk, D], v [*, Hkv, Tk, Dv]; the leading dims * of q, k and
// v must be equal (no broadcasting among them). Inputs may also be 2-D [T, D] (one head, no
// batch). Hq == Hkv unless enable_gqa, where Hkv must divide Hq and query head h reads key/value
// head h / (Hq / Hkv) (PyTorch's repeat_interleave grouping; MQA is Hkv = 1).
//
// Masks (PyTorch's meaning for SDPA; nn::MultiHeadAttention's bool masks mean the opposite):
//   * bool attn_mask: true where a query MAY attend to a key, false where it may not;
//   * float attn_mask: added to the scores (use -inf to forbid), q's dtype;
//   both broadcast to [*, Hq, Tq, Tk] (a ShapeError shows both shapes when they do not).
//   * is_causal: query i attends to keys j <= i, aligned at the top-left corner as in PyTorch
//     (torch.ones(Tq, Tk).tril()), also when Tq != Tk. Unlike PyTorch, it may be combined with
//     attn_mask: a key must then pass both.
// A row whose keys are all masked gives an output row of zeros and zero gradients, never NaN
// (PyTorch's math path gives NaN there).
//
// scale defaults to 1/sqrt(D). dropout_p (in [0, 1)) drops weights with tt's generator, scaling
// the kept ones by 1/(1 - p); it is applied whenever dropout_p > 0 (pass 0 in eval, as in PyTorch).
//
// Paths (Note [attention paths] in attention.cpp). Without dropout and with a mask that needs no
// gradient, one fused kernel runs forward and one backward:
//   * flash (the default once the weights would pass 16 MiB): tiles of queries against tiles of
//     keys with an online softmax; memory O(T) beyond the inputs and output (a logsumexp per
//     query row), causal tiles above the diagonal skipped (backend/cpu/flash_attention.cpp);
//   * math (the default below that): the [*, Hq, Tq, Tk] weights materialized and kept for the
//     backward, causal key blocks above the diagonal skipped (backend/cpu/attention.cpp).
// Dropout, or a float mask that requires grad, uses the composed path (attention_weights, dropout,
// matmul), whatever the guard says, unless the guard forces flash, which then throws. All paths
// are exact and agree to float rounding. Differentiable in q, k, v (and a float mask on the
// composed path), to any order.
#pragma once

#include <optional>

#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// Which kernel scaled_dot_product_attention runs (PyTorch's torch.nn.attention.SDPBackend):
// Auto = the math kernel while the weights it keeps, [*, Hq, Tq, Tk], take at most 16 MiB (as
// fast as flash or faster there: flash's backward rebuilds the scores), flash beyond; the
// composed path when neither can run. Math = the materializing kernel; Flash = the flash kernel,
// and a tt::Error when the call cannot use it (dropout, a mask that requires grad, empty inputs).
// On CUDA, float32 flash runs on tensor cores with the 3xTF32 split (float32 accuracy; 1xTF32
// under tt::cuda::set_allow_tf32(true)); FlashExact = the flash kernel with exact float32 FFMA
// arithmetic, the reference (on the CPU, and for float64, the same as Flash).
enum class SDPBackend { Auto, Math, Flash, FlashExact };

// Forces a kernel for the current thread while alive, in the spirit of PyTorch's sdpa_kernel
// context manager; guards nest and restore the previous choice.
//   { tt::SdpaKernelGuard g(tt::SDPBackend::Math); y = F::scaled_dot_product_attention(q, k, v); }
class SdpaKernelGuard {
 public:
  explicit SdpaKernelGuard(SDPBackend backend);
  ~SdpaKernelGuard();
  SdpaKernelGuard(const SdpaKernelGuard&) = delete;
  SdpaKernelGuard& operator=(const SdpaKernelGuard&) = delete;

 private:
  SDPBackend saved_;
};
// The current thread's choice (Auto unless a guard says otherwise).
SDPBackend sdpa_backend();

// The attention output [*, Hq, Tq, Dv] (torch.nn.functional.scaled_dot_product_attention).

// The attention weights softmax(q @ k^T * scale + mask) [*, Hq, Tq, Tk], the same masks and
// defaults as scaled_dot_product_attention (no dropout). Built from tensor ops: the readable math
// path, and what need_weights returns.

// The declarations: the rows of TT_OPS_ATTENTION (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
