// The collectives of the default group (MPI backend) on every dtype and reduction, their Work
// handles, and their errors, on whatever world size the suite runs with (1, 2 or 3).
#include <catch2/catch.hpp>

#include "dist_util.h"

using namespace tt_test;
namespace dist = tt::distributed;

TEST_CASE("the world: rank, size, local rank and the group agree", "[distributed]") {
  REQUIRE(world() >= 1);
  REQUIRE(rank() >= 0);
  REQUIRE(rank() < world());
  REQUIRE(dist::get_local_rank() <= rank());  // one machine here: local rank == rank
  if (dist::is_initialized()) {
    REQUIRE(dist::default_group()->rank() == rank());
    REQUIRE(dist::default_group()->backend() == dist::Backend::MPI);
  }
  tt::Tensor all = gather(tt::tensor({int64_t(rank())}));
  for (int r = 0; r < world(); ++r) REQUIRE(all.to_vector<int64_t>()[size_t(r)] == r);
}

TEST_CASE("allreduce: sum, avg, max and min of rank-dependent values", "[distributed]") {
  const int W = world(), r = rank();
  double sum = 0, mx = 0, mn = 1e9;
  for (int k = 0; k < W; ++k) {
    sum += k + 1;
    mx = std::max<double>(mx, k + 1);
    mn = std::min<double>(mn, k + 1);
  }
  for (tt::ScalarType dt : {tt::kFloat32, tt::kFloat64, tt::kInt64}) {
    auto make = [&] { return tt::full({2, 3}, double(r + 1), tt::TensorOptions().dtype(dt)); };
    tt::Tensor s = make(), a = make(), x = make(), n = make();
    dist::allreduce(s, dist::ReduceOp::Sum);
    dist::allreduce(x, dist::ReduceOp::Max);
    dist::allreduce(n, dist::ReduceOp::Min);
    REQUIRE(dist_to(s, sum) == 0);
    REQUIRE(dist_to(x, mx) == 0);
    REQUIRE(dist_to(n, mn) == 0);
    if (dt != tt::kInt64) {
      dist::allreduce(a, dist::ReduceOp::Avg);
      REQUIRE(dist_to(a, sum / W) < 1e-6);
    } else {
      REQUIRE_THROWS_WITH(dist::allreduce(a, dist::ReduceOp::Avg), Catch::Contains("avg needs a floating-point"));
    }
  }
}

TEST_CASE("allreduce: bfloat16 sums through float32, bool max is any and min is all", "[distributed]") {
  tt::Tensor b = tt::full({4}, 1.5, tt::TensorOptions().dtype(tt::kBFloat16));
  dist::allreduce(b, dist::ReduceOp::Sum);
  REQUIRE(b.dtype() == tt::kBFloat16);
  REQUIRE(dist_to(b, 1.5 * world()) == 0);
  tt::Tensor any = tt::tensor({rank() == 0, false}), all = tt::tensor({rank() == 0, true});
  dist::allreduce(any, dist::ReduceOp::Max);
  dist::allreduce(all, dist::ReduceOp::Min);
  REQUIRE(any.to_vector<bool>() == std::vector<bool>{true, false});
  REQUIRE(all.to_vector<bool>() == std::vector<bool>{world() == 1, true});
  if (dist::is_initialized())
    REQUIRE_THROWS_WITH(dist::allreduce(tt::tensor({true}), dist::ReduceOp::Sum), Catch::Contains("max (any) or min"));
}

TEST_CASE("allreduce of a non-contiguous view writes through to its base", "[distributed]") {
  tt::Tensor base = tt::arange(6, tt::kFloat32).reshape({2, 3});
  tt::Tensor col = base.transpose(0, 1);  // [3, 2], not contiguous
  dist::allreduce(col, dist::ReduceOp::Sum);
  REQUIRE(base.to_vector<float>() == std::vector<float>{0.f, 1.f * world(), 2.f * world(), 3.f * world(),
                                                        4.f * world(), 5.f * world()});
}

TEST_CASE("broadcast, allgather and reduce_scatter", "[distributed]") {
  const int W = world(), r = rank();
  tt::Tensor t = tt::full({3}, double(r * 10), tt::kFloat32);
  dist::broadcast(t, W - 1);
  REQUIRE(dist_to(t, double((W - 1) * 10)) == 0);

  tt::Tensor mine = tt::full({2}, double(r), tt::kInt64);
  tt::Tensor all = tt::empty({W, 2}, tt::kInt64);
  dist::allgather(all, mine);
  for (int k = 0; k < W; ++k) REQUIRE(dist_to(all.select(0, k), double(k)) == 0);

  tt::Tensor in = tt::arange(W * 2, tt::kFloat64).reshape({W, 2}) + double(r);  // row k: [2k + r, 2k + 1 + r]
  tt::Tensor out = tt::empty({2}, tt::kFloat64);
  dist::reduce_scatter(out, in, dist::ReduceOp::Sum);
  const double ranks = W * (W - 1) / 2.0;
  REQUIRE(out.to_vector<double>() == std::vector<double>{2.0 * r * W + ranks, (2.0 * r + 1) * W + ranks});

  REQUIRE_THROWS_WITH(dist::allgather(tt::empty({W + 1, 2}, tt::kInt64), mine),
                      Catch::Contains("must have shape [world size, *input.shape]"));
  dist::barrier();
}

TEST_CASE("Work handles: collectives started together finish in order with the right values", "[distributed]") {
  if (!dist::is_initialized()) return;  // the group's own methods need a group
  auto g = dist::default_group();
  std::vector<tt::Tensor> ts;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(tt::full({1000}, double(k + rank()), tt::kFloat32));
    works.push_back(g->allreduce(ts.back(), dist::ReduceOp::Sum));
  }
  for (int k = 7; k >= 0; --k) works[size_t(k)]->wait();  // waited in any order
  const double ranks = world() * (world() - 1) / 2.0;
  for (int k = 0; k < 8; ++k) {
    REQUIRE(works[size_t(k)]->is_completed());
    REQUIRE(dist_to(ts[size_t(k)], double(k) * world() + ranks) == 0);
  }
}

TEST_CASE("a shape mismatch between ranks throws on every rank, naming each rank's shape", "[distributed]") {
  if (world() == 1) return;  // needs two ranks to disagree
  tt::Tensor t = tt::zeros({rank() + 2}, tt::kFloat32);
  REQUIRE_THROWS_WITH(dist::allreduce(t), Catch::Contains("collective mismatch") &&
                                              Catch::Contains("rank 0: allreduce of float32 [2] with sum") &&
                                              Catch::Contains("rank 1: allreduce of float32 [3] with sum"));
  tt::Tensor d = rank() == 0 ? tt::zeros({2}, tt::kFloat32) : tt::zeros({2}, tt::kFloat64);
  REQUIRE_THROWS_WITH(dist::broadcast(d, 0), Catch::Contains("float64 [2] from root 0"));
  dist::barrier();  // the group still works afterwards
}

TEST_CASE("bad arguments are clear errors on the calling rank", "[distributed]") {
  if (!dist::is_initialized()) return;
  REQUIRE_THROWS_WITH(dist::broadcast(tt::zeros({2}), world()), Catch::Contains("is not a rank of this group"));
  REQUIRE_THROWS_WITH(dist::allreduce(tt::Tensor()), Catch::Contains("undefined"));
  REQUIRE_THROWS_WITH(dist::init_process_group(dist::Backend::MPI), Catch::Contains("already initialized"));
  if (!dist::is_available(dist::Backend::NCCL))
    REQUIRE_THROWS_WITH(dist::init_process_group(dist::Backend::NCCL), Catch::Contains("already initialized"));
}
