// Embedding: a thin layer over ops/embedding (tt::embedding).
#include "tinytorch/nn/embedding.h"

#include <string>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/nn/init.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/embedding.h"
#include "tinytorch/ops/factory.h"

namespace tt::nn {

namespace {
// padding_idx wrapped into [0, V) as PyTorch stores it; out of [-V, V) is an error.
std::optional<int64_t> wrap_padding_idx(std::optional<int64_t> p, int64_t V) {
  if (!p) return p;
  TT_CHECK_INDEX(*p >= -V && *p < V, "nn::Embedding: padding_idx must be within [", -V, ", ", V,
                 ") for num_embeddings = ", V, ", got ", *p);
  return *p < 0 ? *p + V : *p;
}
}  // namespace

Embedding::Embedding(const EmbeddingOptions& opts) : options(opts) {
  TT_CHECK(opts.num_embeddings() >= 0 && opts.embedding_dim() >= 0,
           "nn::Embedding: num_embeddings and embedding_dim must be >= 0, got ", opts.num_embeddings(), " and ",
           opts.embedding_dim());
  options.padding_idx(wrap_padding_idx(opts.padding_idx(), opts.num_embeddings()));
  weight = register_parameter("weight", empty({opts.num_embeddings(), opts.embedding_dim()}));
  reset_parameters();
}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Tensor& embeddings, bool freeze,
                                                      std::optional<int64_t> padding_idx) {
  TT_CHECK_SHAPE(embeddings.dim() == 2, "nn::Embedding::from_pretrained: expected embeddings of shape "
                 "[num_embeddings, embedding_dim], got ", embeddings.shape());
  auto layer = std::make_shared<Embedding>(
      EmbeddingOptions(embeddings.size(0), embeddings.size(1)).padding_idx(padding_idx));
  {
    NoGradGuard no_grad;
    layer->weight.copy_(embeddings);
  }
  layer->weight.requires_grad_(!freeze);
  return layer;
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) init::zeros_(weight.select(0, *options.padding_idx()));
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices, options.padding_idx()); }

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  return s;
}

}  // namespace tt::nn
