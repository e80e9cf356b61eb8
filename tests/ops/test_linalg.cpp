// matmul in every PyTorch form (1-D·1-D, 1-D·2-D, 2-D·1-D, 2-D, batched, broadcast batch dims,
// transposed and sliced views, float32, float64, int64), mm, bmm and dot, against a naive loop.
#include "test_util.h"

using namespace tt;

namespace {
// [B.., M, K] @ [B.., K, N] with broadcast batch dims, by the textbook loop in float64.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "naive");
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape sa = batch, sb = batch;
  sa.push_back(M); sa.push_back(K);
  sb.push_back(K); sb.push_back(N);
  std::vector<double> av = a.expand(sa).to_vector<double>(), bv = b.expand(sb).to_vector<double>();
  int64_t nb = numel_of(batch);
  std::vector<double> out(size_t(nb * M * N), 0.0);
  for (int64_t p = 0; p < nb; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += av[size_t(p * M * K + i * K + k)] * bv[size_t(p * K * N + k * N + j)];
        out[size_t(p * M * N + i * N + j)] = acc;
      }
  Shape so = batch;
  so.push_back(M);
  so.push_back(N);
  return tensor(out, so, kFloat64);
}
}  // namespace

TEST_CASE("matmul: 1-D and 2-D forms", "[ops][linalg]") {
  Tensor v = tensor({1.0, 2.0, 3.0}), w = tensor({4.0, -5.0, 6.0});
  Tensor m = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});  // [2, 3]

  Tensor d = v.matmul(w);  // 1-D . 1-D -> 0-d
  CHECK(d.dim() == 0);
  CHECK(d.item<float>() == 12.f);
  CHECK(dot(v, w).item<float>() == 12.f);

  Tensor mv = m.matmul(v);  // 2-D . 1-D -> [2]
  CHECK(mv.shape() == Shape{2});
  CHECK(mv.to_vector<float>() == std::vector<float>{14, 32});

  Tensor vm = tensor({1.0, -1.0}).matmul(m);  // 1-D . 2-D -> [3]
  CHECK(vm.shape() == Shape{3});
  CHECK(vm.to_vector<float>() == std::vector<float>{-3, -3, -3});

  Tensor mm_ = m.matmul(m.t());  // [2, 3] @ [3, 2]
  CHECK(mm_.shape() == Shape{2, 2});
  CHECK(mm_.to_vector<float>() == std::vector<float>{14, 32, 32, 77});
  CHECK(mm(m.t(), m).to_vector<float>() == std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45});

  // 1-D with batched: [K] @ [B, K, N] -> [B, N]; [B, M, K] @ [K] -> [B, M]
  Tensor b3 = arange(12.).view({2, 3, 2});
  CHECK(v.matmul(b3).shape() == Shape{2, 2});
  CHECK_ALLCLOSE(v.matmul(b3), naive_matmul(v.view({1, 3}), b3).squeeze(1));
  CHECK(b3.transpose(1, 2).matmul(v).shape() == Shape{2, 2});
  CHECK_ALLCLOSE(b3.transpose(1, 2).matmul(v), naive_matmul(b3.transpose(1, 2), v.view({3, 1})).squeeze(-1));
}

TEST_CASE("matmul against a naive loop: layouts, batches and dtypes", "[ops][linalg]") {
  manual_seed(8);
  struct Case {
    const char* what;
    Tensor a, b;
  };
  const Tensor big_a = randn({40, 24}), big_b = randn({30, 40});
  const std::vector<Case> cases = {
      {"plain 2-D", randn({5, 7}), randn({7, 3})},
      {"a transposed", randn({7, 5}).t(), randn({7, 3})},
      {"b transposed", randn({5, 7}), randn({3, 7}).t()},
      {"both transposed", randn({7, 5}).t(), randn({3, 7}).t()},
      {"sliced rows and columns", big_a.slice(0, 3, 20).slice(1, 2, 22), big_b.slice(1, 4, 24).slice(0, 0, 30, 2).t()},
      {"stepped columns (not BLAS-compatible)", big_a.slice(1, 0, 24, 2).slice(0, 0, 9), big_b.slice(0, 0, 12).slice(1, 0, 40, 3)},
      {"batched", randn({4, 5, 6}), randn({4, 6, 3})},
      {"batched, b transposed", randn({4, 5, 6}), randn({4, 3, 6}).transpose(1, 2)},
      {"batch dims broadcast", randn({2, 1, 5, 6}), randn({3, 6, 4})},
      {"2-D with batched", randn({5, 6}), randn({3, 6, 2})},
      {"batched with 2-D", randn({2, 3, 5, 6}), randn({6, 2})},
      {"expanded batch", randn({1, 5, 6}).expand({4, 5, 6}), randn({4, 6, 2})},
      {"permuted batch", randn({5, 4, 6}).permute({1, 0, 2}), randn({6, 4, 3}).permute({1, 0, 2})},
      {"inner size 1", randn({4, 1}), randn({1, 5})},
      {"row times matrix", randn({1, 9}), randn({9, 4})},
      {"large", randn({130, 70}), randn({70, 90})},
  };
  for (const Case& c : cases) {
    INFO(c.what << ": " << c.a.shape() << " strides " << c.a.strides() << " @ " << c.b.shape()
                << " strides " << c.b.strides());
    Tensor expected = naive_matmul(c.a, c.b);
    Tensor got = c.a.matmul(c.b);
    CHECK(got.dtype() == kFloat32);
    CHECK(got.shape() == expected.shape());
    CHECK_ALLCLOSE(got, expected, 1e-4, 1e-4);
    Tensor got64 = c.a.to(kFloat64).matmul(c.b.to(kFloat64));
    CHECK(got64.dtype() == kFloat64);
    CHECK_ALLCLOSE(got64, expected, 1e-12, 1e-12);
    Tensor ai = (c.a * 4).to(kInt64), bi = (c.b * 4).to(kInt64);
    Tensor goti = ai.matmul(bi);
    CHECK(goti.dtype() == kInt64);
    CHECK(goti.to_vector<int64_t>() == naive_matmul(ai, bi).to(kInt64).to_vector<int64_t>());
  }
  // The operands are left as they were.
  Tensor a = randn({3, 4}).t();
  std::vector<float> before = a.to_vector<float>();
  Tensor r = a.matmul(randn({3, 2}));
  CHECK(a.to_vector<float>() == before);
  CHECK_FALSE(a.is_contiguous());
}

TEST_CASE("mm, bmm and empty products", "[ops][linalg]") {
  Tensor a = arange(6.).view({1, 2, 3}), b = arange(6.).view({1, 3, 2});
  CHECK(bmm(a, b).shape() == Shape{1, 2, 2});
  CHECK(a.bmm(b).to_vector<float>() == std::vector<float>{10, 13, 28, 40});
  CHECK(a.select(0, 0).mm(b.select(0, 0)).to_vector<float>() == std::vector<float>{10, 13, 28, 40});
  // An empty inner dimension gives zeros; empty outer dims give empty results.
  CHECK(zeros({2, 0}).matmul(zeros({0, 3})).to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(zeros({0, 4}).matmul(zeros({4, 3})).shape() == Shape{0, 3});
  CHECK(zeros({2, 4}).matmul(zeros({4, 0})).shape() == Shape{2, 0});
  CHECK(zeros({0}).matmul(zeros({0})).item<float>() == 0.f);
  CHECK(zeros({0, 2, 3}).matmul(zeros({3, 4})).shape() == Shape{0, 2, 4});
}
