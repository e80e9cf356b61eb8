// Positional encodings: tables built on the host in float64 (cheap, once), everything applied
// to activations composed of differentiable tensor ops (slice, cat, mul, add).
#include "tinytorch/nn/positional.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tinytorch/core/checked.h"
#include "tinytorch/nn/init.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/embedding.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/join.h"
#include "tinytorch/ops/view.h"

namespace tt::nn {

namespace {
void check_window(int64_t seq_len, int64_t offset, int64_t max_len, const char* who) {
  TT_CHECK(seq_len >= 0 && offset >= 0, who, ": seq_len and offset must be >= 0, got ", seq_len, " and ", offset);
  // offset <= max_len - seq_len, not offset + seq_len <= max_len: the sum may overflow.
  TT_CHECK_INDEX(seq_len <= max_len && offset <= max_len - seq_len, who, ": positions from ", offset, " (",
                 seq_len, " of them) do not fit in a table of max_len = ", max_len, " (seq_len ", seq_len,
                 ", offset ", offset, ")");
}
}  // namespace

// --- learned ------------------------------------------------------------------------------

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t dim) : max_len(max_len), dim(dim) {
  TT_CHECK(max_len >= 0 && dim >= 0, "nn::LearnedPositionalEmbedding: max_len and dim must be >= 0, got ", max_len,
           " and ", dim);
  weight = register_parameter("weight", empty({max_len, dim}));
  init::normal_(weight);
}

Tensor LearnedPositionalEmbedding::forward(int64_t seq_len, int64_t offset) const {
  check_window(seq_len, offset, max_len, "nn::LearnedPositionalEmbedding");
  return slice(weight, 0, offset, offset + seq_len);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& positions) const { return embedding(weight, positions); }

std::string LearnedPositionalEmbedding::extra_repr() const {
  return std::to_string(max_len) + ", " + std::to_string(dim);
}

// --- sinusoidal ---------------------------------------------------------------------------

Tensor sinusoidal_positions(int64_t seq_len, int64_t dim, double base) {
  TT_CHECK(seq_len >= 0 && dim >= 0, "sinusoidal_positions: seq_len and dim must be >= 0, got ", seq_len, " and ",
           dim);
  TT_CHECK(base > 0, "sinusoidal_positions: base must be > 0, got ", base);
  // A float64 tensor, not a vector: a table too large to hold is a tt::Error from the allocator.
  Tensor table = detail::empty({seq_len, dim}, kFloat64, "sinusoidal_positions");
  // Nothing to fill, and a loop over the rows of an empty [2^62, 0] table would never end.
  if (table.numel() == 0) return table.to(kFloat32);
  double* pe = table.data_ptr<double>();  // Note [sinusoidal layout]
  // TT_EXERCISE_BEGIN(10, 3)
  for (int64_t t = 0; t < seq_len; ++t)
    for (int64_t j = 0; j < dim; ++j) {
      double angle = double(t) * std::pow(base, -double(j - j % 2) / double(dim));
      pe[t * dim + j] = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  return table.to(kFloat32);
  // TT_EXERCISE_END
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t max_len, int64_t dim, double base)
    : max_len(max_len), dim(dim), base(base) {
  pe = register_buffer("pe", sinusoidal_positions(max_len, dim, base));
}

Tensor SinusoidalPositionalEncoding::encoding(int64_t seq_len, int64_t offset) const {
  check_window(seq_len, offset, max_len, "nn::SinusoidalPositionalEncoding");
  return slice(pe, 0, offset, offset + seq_len);
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, int64_t offset) const {
  TT_CHECK_SHAPE(x.dim() >= 2 && x.size(-1) == dim, "nn::SinusoidalPositionalEncoding: expected input [*, T, ",
                 dim, "], got ", x.shape());
  return x + encoding(x.size(-2), offset);
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
  std::ostringstream os;
  os << max_len << ", " << dim;
  if (base != 10000.0) os << ", base=" << base;
  return os.str();
}

// --- rotary -------------------------------------------------------------------------------

Tensor rotate_half(const Tensor& x) {
  const int64_t D = x.size(-1);
  TT_CHECK_SHAPE(D % 2 == 0, "rotate_half: the last dim must be even, got ", x.shape());
  // TT_EXERCISE_BEGIN(10, 4)
  return cat({-slice(x, -1, D / 2, D), slice(x, -1, 0, D / 2)}, -1);
  // TT_EXERCISE_END
}

Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  // TT_EXERCISE_BEGIN(10, 6)
  return x * cos + rotate_half(x) * sin;  // Note [rotary pairing]
  // TT_EXERCISE_END
}

RotaryEmbedding::RotaryEmbedding(const RotaryOptions& options) : options(options) {
  TT_CHECK_SHAPE(options.head_dim() > 0 && options.head_dim() % 2 == 0,
                 "nn::RotaryEmbedding: head_dim must be even and > 0 (coordinates are rotated in pairs), got ",
                 options.head_dim());
  TT_CHECK(options.base() > 0, "nn::RotaryEmbedding: base must be > 0, got ", options.base());
}

namespace {
// cos and sin of positions first .. first + L - 1: {cos, sin}, each float64 [L, D]. The tables are
// tensors, not vectors, so a window too large to hold is a tt::Error from the allocator.
std::pair<Tensor, Tensor> rotary_table(int64_t first, int64_t L, int64_t D, double base) {
  Tensor cos = detail::empty({L, D}, kFloat64, "nn::RotaryEmbedding"), sin = empty_like(cos);
  double* c = cos.data_ptr<double>();
  double* s = sin.data_ptr<double>();
  // TT_EXERCISE_BEGIN(10, 5)
  const int64_t half = D / 2;
  for (int64_t t = 0; t < L; ++t)
    for (int64_t i = 0; i < half; ++i) {
      double angle = double(first + t) * std::pow(base, -2.0 * double(i) / double(D));  // t·θ_i
      c[t * D + i] = c[t * D + i + half] = std::cos(angle);
      s[t * D + i] = s[t * D + i + half] = std::sin(angle);
    }
  // TT_EXERCISE_END
  return {cos, sin};
}

std::pair<Tensor, Tensor> rotary_tensors(int64_t first, int64_t L, int64_t D, double base, const TensorOptions& to) {
  auto [c, s] = rotary_table(first, L, D, base);
  return {c.to(to), s.to(to)};
}
}  // namespace

// The cache covers positions [0, L) and grows by doubling, up to kMaxCachedPositions; a window
// reaching past that (a huge offset) gets its own rows, computed for it alone, so memory follows
// seq_len and not the position. The lock makes cos_sin safe to call from several threads on one
// shared module (Note [threads] in autograd/node.cpp): each caller gets tensors that stay valid
// whatever another caller does to the cache afterwards.
std::pair<Tensor, Tensor> RotaryEmbedding::cos_sin(int64_t seq_len, int64_t offset, ScalarType dtype,
                                                   Device device) const {
  TT_CHECK(seq_len >= 0 && offset >= 0, "nn::RotaryEmbedding: seq_len and offset must be >= 0, got ", seq_len,
           " and ", offset);
  TT_CHECK_DTYPE(is_floating_point(dtype), "nn::RotaryEmbedding: expected a floating-point dtype, got ", dtype);
  const int64_t end = checked_add(offset, seq_len, "nn::RotaryEmbedding"), D = options.head_dim();
  TensorOptions to = TensorOptions().dtype(dtype).device(device);
  if (end > kMaxCachedPositions) return rotary_tensors(offset, seq_len, D, options.base(), to);
  std::lock_guard<std::mutex> lock(cache_mu_);
  bool hit = cos_cached_.defined() && cos_cached_.size(0) >= end && cos_cached_.dtype() == dtype &&
             cos_cached_.device() == device;
  if (!hit) {
    int64_t L = std::max<int64_t>(end, cos_cached_.defined() ? 2 * cos_cached_.size(0) : 16);
    std::tie(cos_cached_, sin_cached_) =
        rotary_tensors(0, std::min(L, kMaxCachedPositions), D, options.base(), to);
  }
  return {slice(cos_cached_, 0, offset, end), slice(sin_cached_, 0, offset, end)};
}

namespace {
void check_rope_input(const Tensor& x, int64_t D) {
  TT_CHECK_SHAPE(x.dim() >= 2 && x.size(-1) == D, "nn::RotaryEmbedding: expected input [*, T, ", D,
                 "] (head_dim ", D, "), got ", x.shape());
}
}  // namespace

Tensor RotaryEmbedding::apply(const Tensor& x, int64_t offset) const {
  check_rope_input(x, options.head_dim());
  auto [cos, sin] = cos_sin(x.size(-2), offset, x.dtype(), x.device());
  return apply_rotary(x, cos, sin);
}

Tensor RotaryEmbedding::apply(const Tensor& x, const Tensor& positions) const {
  check_rope_input(x, options.head_dim());
  TT_CHECK_DTYPE(positions.dtype() == kInt64, "nn::RotaryEmbedding: expected int64 positions, got dtype ",
                 positions.dtype());
  const int64_t T = x.size(-2);
  bool per_batch = positions.dim() == 2 && x.dim() == 4 && positions.size(0) == x.size(0) && positions.size(1) == T;
  TT_CHECK_SHAPE((positions.dim() == 1 && positions.size(0) == T) || per_batch,
                 "nn::RotaryEmbedding: expected positions [T] or [B, T] for input [B, H, T, D], got positions ",
                 positions.shape(), " for input ", x.shape());
  int64_t hi = positions.numel() ? positions.max().item<int64_t>() : -1;
  int64_t lo = positions.numel() ? positions.min().item<int64_t>() : 0;
  TT_CHECK_INDEX(lo >= 0, "nn::RotaryEmbedding: positions must be >= 0, got ", lo);
  // Every position 0 .. hi (hi + 1 is checked: a position of INT64_MAX must not wrap around).
  auto [table_cos, table_sin] = cos_sin(checked_add(hi, 1, "nn::RotaryEmbedding"), 0, x.dtype(), x.device());
  Tensor cos = embedding(table_cos, positions), sin = embedding(table_sin, positions);  // [T, D] or [B, T, D]
  if (per_batch) {
    cos = unsqueeze(cos, 1);  // [B, 1, T, D]: the same rotation for every head
    sin = unsqueeze(sin, 1);
  }
  return apply_rotary(x, cos, sin);
}

std::pair<Tensor, Tensor> RotaryEmbedding::forward(const Tensor& q, const Tensor& k, int64_t offset) const {
  return {apply(q, offset), apply(k, offset)};
}

std::string RotaryEmbedding::extra_repr() const {
  std::ostringstream os;
  os << "head_dim=" << options.head_dim() << ", base=" << options.base();
  return os.str();
}

}  // namespace tt::nn
