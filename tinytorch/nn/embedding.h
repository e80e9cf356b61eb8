// Embedding: a learned table of num_embeddings vectors of size embedding_dim, read by integer
// indices (token ids -> vectors), as torch.nn.Embedding. The op is tt::embedding (ops/embedding.h):
// a gather of rows forward, a scatter-add of rows backward.
//
//   tt::nn::Embedding emb(tt::nn::EmbeddingOptions(65, 128).padding_idx(0));
//   Tensor x = emb(ids);   // ids: int64 [B, T] -> x: [B, T, 128]
//
// Parameter: weight [num_embeddings, embedding_dim], drawn from N(0, 1) as PyTorch does, with the
// padding row (if any) set to zero. Not here: max_norm, sparse gradients, scale_grad_by_freq.
#pragma once

#include <cstdint>
#include <optional>

#include "tinytorch/nn/module.h"

namespace tt::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  // The row that gets no gradient (and starts at zero). Negative counts from the end, as in
  // PyTorch: the layer stores the wrapped value (padding_idx(-1) of 10 rows is 9).
  EmbeddingOptions& padding_idx(std::optional<int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  // Throws tt::Error for negative sizes and IndexError for a padding_idx outside
  // [-num_embeddings, num_embeddings).
  explicit Embedding(const EmbeddingOptions& options);
  // A layer whose weight is a copy of `embeddings` [V, E] (trainable unless freeze), as PyTorch's
  // Embedding.from_pretrained; the padding row is left as given.
  static std::shared_ptr<Embedding> from_pretrained(const Tensor& embeddings, bool freeze = true,
                                                    std::optional<int64_t> padding_idx = std::nullopt);
  // indices: int64 [*] -> [*, embedding_dim]
  Tensor forward(const Tensor& indices) const;
  Tensor operator()(const Tensor& indices) const { return forward(indices); }
  // Draws the weight again from N(0, 1) and zeroes the padding row.
  void reset_parameters();
  // PyTorch's text: "65, 128, padding_idx=0".
  std::string extra_repr() const override;

  EmbeddingOptions options;  // padding_idx already wrapped into [0, num_embeddings)
  Tensor weight;             // [num_embeddings, embedding_dim]
};

}  // namespace tt::nn
