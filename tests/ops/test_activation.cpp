// Activations (ops/activation.h): softmax / log_softmax over every dim against PyTorch values,
// stability at +-1e4 and on fully masked (-inf) rows, NaN propagation, non-contiguous and
// expanded inputs, the fused backward against PyTorch and finite differences (gradcheck, and
// gradgradcheck for double backward); GELU (erf, tanh), SiLU, LeakyReLU likewise; bad inputs.
// Reference literals come from torch 1.13 (float64 unless marked float32).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const std::vector<double>& v, const Shape& s) { return tensor(v, s, kFloat64); }

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// softmax / log_softmax of every row along `dim`, in double, straight from the definition.
Tensor naive_softmax(const Tensor& x, int dim, bool log) {
  Tensor xc = x.to(kFloat64).contiguous();
  std::vector<double> v = xc.to_vector<double>(), out(v.size());
  int64_t len = x.size(dim), inner = 1;
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  int64_t outer = x.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return o * len * inner + k * inner + i; };
      double m = -kInf, s = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, v[at(k)]);
      for (int64_t k = 0; k < len; ++k) s += std::exp(v[at(k)] - m);
      for (int64_t k = 0; k < len; ++k)
        out[at(k)] = log ? v[at(k)] - m - std::log(s) : std::exp(v[at(k)] - m) / s;
    }
  return tensor(out, x.shape(), kFloat64);
}

Tensor leaf64(const Tensor& t) {
  Tensor l = t.detach().to(kFloat64);
  l.requires_grad_();
  return l;
}

// x3 = 3 sin(0.37 * arange(24)).reshape(2, 3, 4)
const std::vector<double> kX3 = {
    0.0, 1.084846295894886, 2.022863734884435, 2.6870960570401428, 2.98764253361292, 2.8838256089259,
    2.38969641670826, 1.5721330250618282, 0.5417888036826988, -0.5618839906287095, -1.5895084227254803,
    -2.402000346527453, -2.889392791719949, -2.9857194773074878, -2.677943038284704, -2.007719571828786,
    -1.065760679964128, 0.020443920224310526, 1.103881531717154, 2.0379139564344446, 2.6961242874348805,
    2.9894268442218017, 2.8781245016785926, 2.3772815097255853};

}  // namespace

TEST_CASE("softmax and log_softmax match PyTorch on a small matrix", "[ops][activation][softmax]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    Tensor x = tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 5.0}}).to(dt);
    Tensor y = softmax(x, -1);
    CHECK(y.dtype() == dt);
    CHECK(y.shape() == x.shape());
    double tol = dt == kFloat32 ? 1e-6 : 1e-14;
    CHECK_ALLCLOSE(y, f64({0.09003057317038045, 0.2447284710547976, 0.6652409557748218, 0.0024561149044509535,
                           0.006676412513376451, 0.9908674725821726}, {2, 3}), tol, tol);
    CHECK_ALLCLOSE(log_softmax(x, 1), f64({-2.4076059644443806, -1.4076059644443804, -0.4076059644443804,
                                           -6.0091744845917345, -5.0091744845917345, -0.009174484591734727}, {2, 3}),
                   tol, tol);
    CHECK_ALLCLOSE(x.softmax(0), f64({0.8807970779778823, 0.8807970779778823, 0.11920292202211755,
                                      0.11920292202211755, 0.11920292202211755, 0.8807970779778823}, {2, 3}), tol, tol);
    CHECK_ALLCLOSE(x.log_softmax(-1), log_softmax(x, 1), 0, 0);
  }
}

TEST_CASE("softmax over dim 0, a middle dim and the last dim of a 3-D tensor", "[ops][activation][softmax]") {
  const std::vector<std::vector<double>> sm = {
      {0.9473195869512918, 0.9832186895527882, 0.9909939046390576, 0.9909402761684863, 0.9829331514654018,
       0.946006291477263, 0.7834379726851103, 0.38561532545298355, 0.1039267829712394, 0.02788701592885991,
       0.01134427534863411, 0.008332024739820091, 0.05268041304870829, 0.01678131044721171, 0.009006095360942523,
       0.009059723831513693, 0.017066848534598084, 0.05399370852273699, 0.2165620273148897, 0.6143846745470164,
       0.8960732170287606, 0.97211298407114, 0.988655724651366, 0.9916679752601799},
      {0.04433029474801163, 0.13819494483911673, 0.40483466769349463, 0.7495740611344193, 0.8794624172363543,
       0.835177807342947, 0.5842397548257875, 0.2458058741017132, 0.0762072880156341, 0.026627247817936375,
       0.010925577480717836, 0.004620064763867497, 0.0036532031162249184, 0.002411175940250936,
       0.003292732190382251, 0.007226180733826082, 0.02262909483977799, 0.04872917701508189, 0.14453797028134113,
       0.4129572894659084, 0.9737177020439971, 0.9488596470446673, 0.8521692975282765, 0.5798165298002655},
      {0.038156453194038986, 0.11290437172514063, 0.2884606355763207, 0.5604785395044998, 0.3711770389373844,
       0.3345753841988763, 0.2041250968558352, 0.09012248000790406, 0.6653360896051831, 0.22065921913955142,
       0.07896423942523427, 0.035040451830031266, 0.17990231321329492, 0.1633813948955514, 0.22226353060148193,
       0.43445276128967175, 0.028573201226754396, 0.08466259263369105, 0.2501626909946594, 0.6366015151448952,
       0.2343318297386566, 0.3142034617519358, 0.28110784925791577, 0.17035685925149177}};
  const std::vector<std::vector<double>> lsm = {
      {-0.05411876970584333, -0.016923712008631246, -0.009046895388463807, -0.009101012695792806,
       -0.0172141657604085, -0.055506059342159436, -0.2440633872821386, -0.9529149726035242, -2.264068637664028,
       -3.5795940773710933, -4.479042036864047, -4.787648786334328, -2.9435115614257925, -4.087489485211004,
       -4.709853668557603, -4.703916641564722, -4.070617379337456, -2.9188877480437485, -1.529878272273245,
       -0.48713404123090775, -0.10973315391184614, -0.028283242520581873, -0.0114091124599734,
       -0.008366930081289827},
      {-3.1160869812959677, -1.979089946905737, -0.9042765231405954, -0.2882501522660093, -0.12844444768304744,
       -0.18011063387472326, -0.5374438413167704, -1.4032131842443238, -2.574298177613269, -3.625820233429333,
       -4.516648680750511, -5.377346555833605, -5.612150930134709, -6.027640708471731, -5.71603760583644,
       -4.930044634968853, -3.7885188183788876, -3.021477310939933, -1.9342130358345822, -0.8844111067056226,
       -0.026633850979879192, -0.052494386942441795, -0.15997006587314352, -0.545043553414482},
      {-3.2660603823706396, -2.1812140864757534, -1.2431966474862044, -0.5789643253304967, -0.9910761362941977,
       -1.0948930609812182, -1.5890222531988578, -2.40658564484529, -0.4074629680942574, -1.5111357624056656,
       -2.5387601945024367, -3.351252118304409, -1.7153412797798295, -1.8116679653673682, -1.5038915263445842,
       -0.8336680598886664, -3.555286020477593, -2.4690814202891542, -1.385643808796311, -0.4516113840790203,
       -1.4510170923381622, -1.157714535551241, -1.2690168780944502, -1.7698598700474575}};
  Tensor x = f64(kX3, {2, 3, 4});
  for (int d = 0; d < 3; ++d) {
    INFO("dim " << d);
    CHECK_ALLCLOSE(softmax(x, d), f64(sm[d], {2, 3, 4}), 1e-13, 1e-14);
    CHECK_ALLCLOSE(log_softmax(x, d), f64(lsm[d], {2, 3, 4}), 1e-13, 1e-14);
    CHECK_ALLCLOSE(softmax(x, d - 3), softmax(x, d), 0, 0);  // negative dims count from the end
    CHECK_ALLCLOSE(softmax(x.to(kFloat32), d), f64(sm[d], {2, 3, 4}), 1e-5, 1e-6);
    CHECK_ALLCLOSE(log_softmax(x.to(kFloat32), d), f64(lsm[d], {2, 3, 4}), 1e-5, 1e-6);
  }
}

TEST_CASE("softmax of non-contiguous, expanded and large inputs", "[ops][activation][softmax]") {
  manual_seed(31);
  // Transposed, sliced with a step, and with a storage offset.
  Tensor base = randn({6, 9, 5}) * 3;
  std::vector<Tensor> views = {base.transpose(0, 2), base.slice(1, 1, 9, 2), base.permute({1, 0, 2}).select(2, 3),
                               base.transpose(1, 2).slice(0, 2, 6)};
  for (size_t v = 0; v < views.size(); ++v)
    for (int d = 0; d < views[v].dim(); ++d) {
      INFO("view " << v << " dim " << d);
      CHECK_FALSE(views[v].is_contiguous());
      CHECK_ALLCLOSE(softmax(views[v], d), naive_softmax(views[v], d, false), 1e-5, 1e-6);
      CHECK_ALLCLOSE(log_softmax(views[v], d), naive_softmax(views[v], d, true), 1e-5, 1e-5);
      CHECK_ALLCLOSE(softmax(views[v], d), softmax(views[v].contiguous(), d), 0, 0);
    }
  // An expanded input (stride 0): along the expanded dim every row is uniform.
  Tensor e = tensor({1.0, -2.0, 4.0}).view({3, 1}).expand({3, 4});
  CHECK_ALLCLOSE(softmax(e, 1), full({3, 4}, 0.25), 1e-7, 1e-7);
  CHECK_ALLCLOSE(softmax(e, 0), naive_softmax(e, 0, false), 1e-6, 1e-7);
  // Large enough for the threaded path, with rows long and short, float32 and float64.
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor big = (randn({300, 257}) * 4).to(dt);
    double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    CHECK_ALLCLOSE(softmax(big, 1), naive_softmax(big, 1, false), tol, tol * 0.1);
    CHECK_ALLCLOSE(softmax(big, 0), naive_softmax(big, 0, false), tol, tol * 0.1);
    CHECK_ALLCLOSE(log_softmax(big.t(), 1), naive_softmax(big.t(), 1, true), tol, tol);
  }
  // A long (vocabulary-sized) row still sums to 1.
  Tensor wide = randn({2, 50000}) * 2;
  Tensor s = softmax(wide, -1).sum(Shape{1});
  CHECK_ALLCLOSE(s, ones({2}), 1e-5, 1e-5);
  CHECK_ALLCLOSE(log_softmax(wide, -1), naive_softmax(wide, 1, true), 1e-5, 1e-5);
}

TEST_CASE("softmax is stable at +-1e4 and never overflows", "[ops][activation][softmax]") {
  Tensor x = tensor({{1e4, -1e4, 0.0}, {1e4, 1e4 - 1, 1e4 - 2}, {-1e4, -1e4 + 1, -1e4 + 2}});  // float32
  Tensor y = softmax(x, -1);
  CHECK(all_finite(y));
  // torch 1.13, float32
  CHECK_ALLCLOSE(y, tensor({{1.0, 0.0, 0.0}, {0.6652409434318542, 0.2447284758090973, 0.09003057330846786},
                            {0.09003057330846786, 0.2447284758090973, 0.6652409434318542}}), 1e-6, 1e-7);
  Tensor ly = log_softmax(x, -1);
  CHECK(all_finite(ly));
  CHECK_ALLCLOSE(ly, tensor({{0.0, -20000.0, -10000.0}, {-0.40760594606399536, -1.4076058864593506, -2.4076058864593506},
                             {-2.4076058864593506, -1.4076058864593506, -0.40760594606399536}}), 1e-6, 1e-6);
  // The largest float32 values too.
  Tensor huge = tensor({3e38, -3e38, 3e38});
  CHECK_ALLCLOSE(softmax(huge, 0), tensor({0.5, 0.0, 0.5}), 1e-7, 1e-7);
}

TEST_CASE("softmax of a fully masked (all -inf) row is zeros, log_softmax -inf, never NaN",
          "[ops][activation][softmax]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    Tensor x = tensor({{-kInf, -kInf, -kInf, -kInf}, {0.5, -kInf, 1.5, -kInf}, {-kInf, -kInf, -kInf, 2.0}}).to(dt);
    Tensor y = softmax(x, -1);
    CHECK_ALLCLOSE(y, tensor({{0.0, 0.0, 0.0, 0.0}, {0.2689414213699951, 0.0, 0.7310585786300049, 0.0},
                              {0.0, 0.0, 0.0, 1.0}}), 1e-6, 1e-7);
    CHECK(all_finite(y));
    Tensor ly = log_softmax(x, -1);
    CHECK_ALLCLOSE(ly, tensor({{-kInf, -kInf, -kInf, -kInf}, {-1.3132616875182228, -kInf, -0.3132616875182228, -kInf},
                               {-kInf, -kInf, -kInf, 0.0}}), 1e-6, 1e-7);
    // Masked along a strided dim (the gather path) and over dim 0.
    CHECK_ALLCLOSE(softmax(x.t(), 0), y.t(), 0, 0);
    CHECK_ALLCLOSE(softmax(x.t().contiguous(), 0), y.t(), 0, 0);
    CHECK_ALLCLOSE(log_softmax(x.t(), 0), ly.t(), 0, 0);
  }
  // A whole masked attention block, [B, H, T, T] with every score of batch 1 masked.
  Tensor scores = randn({2, 2, 3, 3});
  Tensor mask = tensor({false, true}).view({2, 1, 1, 1}).expand({2, 2, 3, 3});
  Tensor p = softmax(scores.masked_fill(mask, -kInf), -1);
  CHECK(all_finite(p));
  CHECK_ALLCLOSE(p.select(0, 1), zeros({2, 3, 3}), 0, 0);
  CHECK_ALLCLOSE(p.select(0, 0).sum(Shape{-1}), ones({2, 3}), 1e-6, 1e-6);
}

TEST_CASE("softmax propagates NaN like PyTorch and handles empty and 0-d tensors", "[ops][activation][softmax]") {
  Tensor x = tensor({{1.0, kNaN, 2.0}, {-kInf, kNaN, -kInf}, {1.0, 2.0, 3.0}});
  Tensor y = softmax(x, 1), ly = log_softmax(x, 1);
  for (Tensor t : {y, ly}) {
    std::vector<double> v = t.to_vector<double>();
    for (int i = 0; i < 6; ++i) CHECK(std::isnan(v[i]));  // a NaN row stays NaN, masked or not
    for (int i = 6; i < 9; ++i) CHECK(std::isfinite(v[i]));
  }
  CHECK(softmax(zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK(softmax(zeros({3, 0}), 1).shape() == Shape{3, 0});
  CHECK(log_softmax(zeros({3, 0}), 0).shape() == Shape{3, 0});
  Tensor s = scalar_tensor(2.5);
  CHECK(softmax(s, 0).item<double>() == 1.0);
  CHECK(softmax(s, -1).item<double>() == 1.0);
  CHECK(log_softmax(s, 0).item<double>() == 0.0);
}

TEST_CASE("softmax backward matches PyTorch and finite differences", "[ops][activation][softmax][autograd]") {
  Tensor dy = f64({0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, {2, 3});
  for (bool log : {false, true}) {
    INFO((log ? "log_softmax" : "softmax"));
    Tensor x = leaf64(tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 5.0}}));
    Tensor y = log ? log_softmax(x, -1) : softmax(x, -1);
    REQUIRE(y.requires_grad());
    CHECK(y.grad_fn()->name() == (log ? "LogSoftmaxBackward0" : "SoftmaxBackward0"));
    y.backward(dy);
    Tensor expected = log ? f64({0.36495414024442935, -1.3670927065821965, 1.0021385663377673, 1.4975438850955491,
                                 0.24332358748662355, -1.7408674725821727}, {2, 3})
                          : f64({-0.05678847003696693, -0.5214597727496746, 0.5782482427866417, 0.00549628737277858,
                                 0.006594942447692357, -0.012091229820470962}, {2, 3});
    CHECK_ALLCLOSE(x.grad(), expected, 1e-12, 1e-14);
    CHECK_FALSE(x.grad().requires_grad());  // the fused kernel records nothing
  }
  manual_seed(32);
  using autograd::TensorList;
  for (bool log : {false, true})
    for (int d : {0, 1, 2}) {
      INFO((log ? "log_softmax" : "softmax") << " dim " << d);
      auto fn = [log, d](const TensorList& in) { return log ? log_softmax(in[0], d) : softmax(in[0], d); };
      Tensor contiguous = leaf64(randn({2, 3, 4}));
      Tensor strided = leaf64(randn({4, 3, 5}, kFloat64).slice(2, 0, 5, 2).transpose(0, 2));  // [3, 3, 4]
      autograd::GradcheckResult r1 = autograd::gradcheck(fn, {contiguous});
      CHECK(r1.ok);
      INFO(r1.message);
      autograd::GradcheckResult r2 = autograd::gradcheck(fn, {strided});
      CHECK(r2.ok);
      INFO(r2.message);
    }
}

// Note [softmax sums in double] of cpu/softmax.cpp: log_softmax's float32 backward over rows of
// 1000 (issue 17's failing shape) against float64 arithmetic on the same float32 y and dy, within
// the bound derived there, |dx - exact| <= 4.04 u |exp(y) s| + u |dx| (u = 2^-24), taken with
// 5 u and 2 u. Sums of dy in float lanes broke it by ~200x on such rows. The forward is held to
// its own bound: y = fl(fl(x - m) - fl(L)) is within u (|x - m| + |L| + |y|) of x - m - log(sum).
TEST_CASE("log_softmax float32 on rows of 1000 stays within its error bound of a float64 reference",
          "[ops][activation][softmax][precision]") {
  const double u = std::ldexp(1.0, -24);
  Generator gen(20240607);
  const int64_t R = 64, C = 1000;
  Tensor x = (randn({R, C}, TensorOptions(), &gen) * 3).requires_grad_();
  Tensor dy = randn({R, C}, TensorOptions(), &gen);
  Tensor y = log_softmax(x, 1);
  y.backward(dy);
  std::vector<float> xv = x.detach().to_vector<float>(), yv = y.detach().to_vector<float>();
  std::vector<float> dyv = dy.to_vector<float>(), dxv = x.grad().to_vector<float>();
  double worst_fwd = 0, worst_bwd = 0;
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = xv.data() + r * C;
    const float* yr = yv.data() + r * C;
    const float* gr = dyv.data() + r * C;
    const float* dr = dxv.data() + r * C;
    double m = -kInf, se = 0, s = 0;
    for (int64_t i = 0; i < C; ++i) m = std::max(m, double(xr[i]));
    for (int64_t i = 0; i < C; ++i) se += std::exp(double(xr[i]) - m);
    for (int64_t i = 0; i < C; ++i) s += double(gr[i]);
    const double L = std::log(se);
    for (int64_t i = 0; i < C; ++i) {
      const double want_y = double(xr[i]) - m - L;
      const double bound_y = 1.5 * u * (std::fabs(double(xr[i]) - m) + L + std::fabs(want_y)) + 1e-12;
      worst_fwd = std::max(worst_fwd, std::fabs(double(yr[i]) - want_y) / bound_y);
      const double es = std::exp(double(yr[i])) * s;  // from the float32 y the backward reads
      const double want_dx = double(gr[i]) - es;
      const double bound_dx = 5 * u * std::fabs(es) + 2 * u * std::fabs(want_dx) + 1e-12;
      worst_bwd = std::max(worst_bwd, std::fabs(double(dr[i]) - want_dx) / bound_dx);
    }
  }
  INFO("worst error over its bound: forward " << worst_fwd << ", backward " << worst_bwd);
  CHECK(worst_fwd <= 1.0);
  CHECK(worst_bwd <= 1.0);
}

TEST_CASE("softmax gradient of a masked row is zero and finite, and sum(softmax) has zero gradient",
          "[ops][activation][softmax][autograd]") {
  Tensor x = leaf64(tensor({{-kInf, -kInf, -kInf}, {0.5, -kInf, 1.5}}));
  Tensor y = softmax(x, -1);
  y.backward(f64({1.0, -2.0, 3.0, 0.5, 4.0, -1.0}, {2, 3}));
  std::vector<double> g = x.grad().to_vector<double>();
  for (double v : g) CHECK(std::isfinite(v));
  CHECK(g[0] == 0.0);
  CHECK(g[1] == 0.0);
  CHECK(g[2] == 0.0);
  CHECK(g[4] == 0.0);  // a masked entry of a live row gets no gradient either
  // softmax sums to 1 along dim, so d(sum)/dx is 0 (the grad arrives expanded, stride 0).
  Tensor z = leaf64(randn({4, 5}));
  softmax(z, 1).sum().backward();
  CHECK_ALLCLOSE(z.grad(), zeros({4, 5}, kFloat64), 0, 1e-15);
  // The same for log_softmax: d/dx sum(log_softmax) = 1 - n * softmax.
  Tensor w = leaf64(randn({4, 5}));
  log_softmax(w, 1).sum().backward();
  CHECK_ALLCLOSE(w.grad(), 1.0 - softmax(w.detach(), 1) * 5.0, 1e-12, 1e-14);
}

TEST_CASE("softmax double backward goes through differentiable ops", "[ops][activation][softmax][autograd]") {
  manual_seed(33);
  using autograd::TensorList;
  for (bool log : {false, true}) {
    INFO((log ? "log_softmax" : "softmax"));
    auto fn = [log](const TensorList& in) { return log ? log_softmax(in[0], 1) : softmax(in[0], 1); };
    autograd::GradcheckResult r = autograd::gradgradcheck(fn, {leaf64(randn({3, 4}))});
    INFO(r.message);
    CHECK(r.ok);
    // Under create_graph the gradient itself has a graph.
    Tensor x = leaf64(randn({2, 3}));
    Tensor y = fn({x});
    TensorList g = autograd::grad({y}, {x}, {ones_like(y.detach()) * 0.5 + x.detach()}, true, true);
    CHECK(g[0].requires_grad());
  }
}

TEST_CASE("gelu, silu and leaky_relu match PyTorch", "[ops][activation][gelu]") {
  const std::vector<double> x = {-3.0, -1.5, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 6.0};
  const std::vector<double> gelu_ref = {-0.00404969409489031, -0.10021080190328704, -0.15426876936299344,
                                        -0.000499601057786089, 0.0, 0.000500398942213911, 0.34573123063700656,
                                        0.841344746068543, 2.4844758366855597, 5.999999994080474};
  const std::vector<double> gelu_tanh_ref = {-0.0036373920817729943, -0.10042842301976707, -0.15428599017485606,
                                             -0.000499601057786418, 0.0, 0.000500398942213582, 0.34571400982514394,
                                             0.8411919906082768, 2.484915733910001, 5.9999999999156035};
  const std::vector<double> silu_ref = {-0.14227761953270035, -0.2736382857095345, -0.1887703343990727,
                                        -0.0004997500000208334, 0.0, 0.0005002499999791667, 0.3112296656009273,
                                        0.7310585786300049, 2.3103545499468914, 5.985164261060192};
  const std::vector<double> leaky_ref = {-0.03, -0.015, -0.005, -1e-05, 0.0, 0.001, 0.5, 1.0, 2.5, 6.0};
  const std::vector<double> leaky2_ref = {-0.6, -0.3, -0.1, -0.0002, 0.0, 0.001, 0.5, 1.0, 2.5, 6.0};
  const Shape s{10};
  for (ScalarType dt : {kFloat64, kFloat32}) {
    INFO(dt);
    Tensor t = f64(x, s).to(dt);
    // float32 GELU uses a vectorized erf with absolute error ~1e-7 (torch's float32 GELU too).
    double rtol = dt == kFloat32 ? 2e-6 : 1e-14, atol = dt == kFloat32 ? 5e-7 : 1e-15;
    CHECK(gelu(t).dtype() == dt);
    CHECK_ALLCLOSE(gelu(t), f64(gelu_ref, s), rtol, atol);
    CHECK_ALLCLOSE(gelu(t, "none"), f64(gelu_ref, s), rtol, atol);
    CHECK_ALLCLOSE(gelu(t, "tanh"), f64(gelu_tanh_ref, s), rtol, atol);
    CHECK_ALLCLOSE(silu(t), f64(silu_ref, s), rtol, atol);
    CHECK_ALLCLOSE(leaky_relu(t), f64(leaky_ref, s), rtol, atol);
    CHECK_ALLCLOSE(leaky_relu(t, 0.2), f64(leaky2_ref, s), rtol, atol);
  }
}

TEST_CASE("gelu, silu and leaky_relu backward match PyTorch and finite differences", "[ops][activation][gelu][autograd]") {
  const std::vector<double> x = {-3.0, -1.5, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 6.0};
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    std::vector<double> grad;  // torch 1.13: d/dx of sum(f(x))
    const char* node;
  };
  const std::vector<Case> cases = {
      {"gelu", [](const Tensor& t) { return gelu(t); },
       {-0.01194564720418392, -0.1274691922299796, 0.13250487534383712, 0.4992021157051586, 0.5, 0.5007978842948414,
        0.8674951246561629, 1.0833154705876864, 1.037611085908145, 1.0000000354687093},
       "GeluBackward0"},
      {"gelu tanh", [](const Tensor& t) { return gelu(t, "tanh"); },
       {-0.011584166630969648, -0.12771079315143308, 0.13263009646535764, 0.499202115706475, 0.5, 0.500797884293525,
        0.8673699035346424, 1.0829640838457826, 1.037951576212666, 1.0000000007709977},
       "GeluBackward0"},
      {"silu", [](const Tensor& t) { return silu(t); },
       {-0.08810410601516962, -0.041294154299142946, 0.2600388126973482, 0.4995000000833333, 0.5, 0.5004999999166666,
        0.7399611873026519, 0.9276705118714869, 1.0994011113415267, 1.0123264325915249},
       "SiluBackward0"},
      {"leaky_relu 0.2", [](const Tensor& t) { return leaky_relu(t, 0.2); },
       {0.2, 0.2, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0, 1.0, 1.0},
       "LeakyReluBackward0"},
  };
  manual_seed(34);
  for (const Case& c : cases) {
    INFO(c.name);
    for (ScalarType dt : {kFloat64, kFloat32}) {
      INFO(dt);
      Tensor t = f64(x, {10}).to(dt).requires_grad_();
      Tensor y = c.fn(t);
      CHECK(y.grad_fn()->name() == c.node);
      y.sum().backward();  // the incoming gradient is an expanded scalar
      double tol = dt == kFloat32 ? 1e-6 : 1e-13;
      CHECK_ALLCLOSE(t.grad(), f64(c.grad, {10}), tol, tol);
    }
    using autograd::TensorList;
    auto fn = [&c](const TensorList& in) { return c.fn(in[0]); };
    // Away from leaky_relu's kink at 0, where finite differences straddle two slopes.
    Tensor away = (rand({3, 4}, kFloat64) + 0.1) * where(rand({3, 4}, kFloat64) < 0.5, -3.0, full({3, 4}, 3.0, kFloat64));
    autograd::GradcheckResult r1 = autograd::gradcheck(fn, {leaf64(away.t())});
    INFO(r1.message);
    CHECK(r1.ok);
    autograd::GradcheckResult r2 = autograd::gradgradcheck(fn, {leaf64(away)});
    INFO(r2.message);
    CHECK(r2.ok);
  }
}

TEST_CASE("gelu float32 stays within 1e-6 of the float64 reference over a wide range", "[ops][activation][gelu]") {
  Tensor x64 = linspace(-12.0, 12.0, 24001, kFloat64);
  Tensor x32 = x64.to(kFloat32);
  for (const char* a : {"none", "tanh"}) {
    INFO(a);
    Tensor ref = gelu(x32.to(kFloat64), a);
    CHECK_ALLCLOSE(gelu(x32, a), ref, 1e-6, 1e-6);
    Tensor g32 = gelu_backward(ones_like(x32), x32, a), g64 = gelu_backward(ones_like(ref), x32.to(kFloat64), a);
    CHECK_ALLCLOSE(g32, g64, 1e-6, 1e-6);
  }
  Tensor s = silu(x32), sref = silu(x32.to(kFloat64));
  CHECK_ALLCLOSE(s, sref, 1e-6, 1e-6);
  // Strided input, and the threaded path, give the same numbers as the contiguous one.
  Tensor big = randn({400, 300}) * 3;
  CHECK_ALLCLOSE(gelu(big.t()), gelu(big.t().contiguous()), 0, 0);
  CHECK_ALLCLOSE(gelu(big.slice(1, 0, 300, 3)), gelu(big.slice(1, 0, 300, 3).contiguous()), 0, 0);
}

TEST_CASE("gelu, silu and leaky_relu special values", "[ops][activation][gelu]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    Tensor x = tensor({-kInf, kInf, kNaN, -100.0, 100.0, -1e4, 1e4}).to(dt);
    // torch: gelu(-inf) = nan (x * Phi(x) = -inf * 0), gelu(inf) = inf; huge finite inputs are exact.
    std::vector<double> g = gelu(x).to_vector<double>(), gt = gelu(x, "tanh").to_vector<double>();
    std::vector<double> sl = silu(x).to_vector<double>(), lr = leaky_relu(x, 0.1).to_vector<double>();
    for (const std::vector<double>& v : {g, gt, sl}) {
      CHECK(std::isnan(v[0]));
      CHECK(v[1] == kInf);
      CHECK(std::isnan(v[2]));
      CHECK(std::fabs(v[3]) < 1e-30);
      CHECK(v[4] == 100.0);
      CHECK(std::fabs(v[5]) < 1e-30);
      CHECK(v[6] == 1e4);
    }
    CHECK(lr[0] == -kInf);
    CHECK(lr[1] == kInf);
    CHECK(std::isnan(lr[2]));
    CHECK(lr[3] == Approx(-10.0));
    // Derivatives at large |x| are 0 and 1, not NaN.
    Tensor big = tensor({-1e4, -100.0, 100.0, 1e4}).to(dt);
    for (const char* a : {"none", "tanh"})
      CHECK_ALLCLOSE(gelu_backward(ones_like(big), big, a), tensor({0.0, 0.0, 1.0, 1.0}), 0, 1e-30);
  }
}

TEST_CASE("softplus matches PyTorch on both sides of its threshold and where exp overflows",
          "[ops][activation][softplus]") {
  // torch.nn.functional.softplus in float64 (torch 1.13), and its gradient for beta = 1.
  const std::vector<double> x = {-100.0, -30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 19.5, 20.5, 100.0};
  const std::vector<double> ref = {3.720075976020836e-44, 9.357622968839737e-14, 0.04858735157374206,
                                   0.4740769841801067, 0.6931471805599453, 0.9740769841801067, 3.048587351573742,
                                   19.500000003398267, 20.5, 100.0};
  const std::vector<double> ref_beta2_t5 = {6.919482633683688e-88, 4.37825538134826e-27, 0.0012378425688652247,
                                            0.15663084375911143, 0.34657359027997264, 0.6566308437591114, 3.0,
                                            19.5, 20.5, 100.0};
  const std::vector<double> ref_beta_neg = {-100.0, -30.0, -3.007365163232396, -0.7579140040765999,
                                            -0.46209812037329684, -0.2579140040766, -0.007365163232395878,
                                            -1.3206725320325224e-13, -2.946818735760717e-14,
                                            -4.783397315442941e-66};
  const std::vector<double> grad_ref = {3.720075976020836e-44, 9.3576229688393e-14, 0.04742587317756679,
                                        0.37754066879814546, 0.5, 0.6224593312018546, 0.9525741268224333,
                                        0.9999999966017322, 1.0, 1.0};
  const Shape s{10};
  Tensor t = f64(x, s);
  CHECK_ALLCLOSE(softplus(t), f64(ref, s), 1e-14, 0);
  CHECK_ALLCLOSE(softplus(t, 2.0, 5.0), f64(ref_beta2_t5, s), 1e-14, 0);
  CHECK_ALLCLOSE(softplus(t, -1.5), f64(ref_beta_neg, s), 1e-14, 0);
  Tensor leaf = t.clone().requires_grad_(true);
  softplus(leaf).sum().backward();
  CHECK_ALLCLOSE(leaf.grad(), f64(grad_ref, s), 1e-14, 0);  // 1/2 at 0 exactly, 1 above the threshold
  // float32 and bf16 stay finite where exp(beta x) overflows their range.
  Tensor f = t.to(kFloat32);
  CHECK(softplus(f).dtype() == kFloat32);
  CHECK_ALLCLOSE(softplus(f), f64(ref, s).to(kFloat32), 1e-6, 1e-30);
  for (float v : softplus(f * 1e4, 1.0, 1e9).to_vector<float>()) CHECK(std::isfinite(v));  // log1p(exp(1e6))
  CHECK(softplus(t.to(kBFloat16)).dtype() == kBFloat16);
}

TEST_CASE("activation ops reject integer inputs, bad dims and bad gelu modes", "[ops][activation][errors]") {
  Tensor i = tensor({1, 2, 3});
  Tensor b = tensor({true, false});
  using Catch::Matchers::Contains;
  CHECK_THROWS_AS(softmax(i, 0), DtypeError);
  CHECK_THROWS_WITH(softmax(i, 0), Contains("softmax") && Contains("floating-point") && Contains("int64"));
  CHECK_THROWS_WITH(log_softmax(b, 0), Contains("log_softmax") && Contains("bool"));
  CHECK_THROWS_WITH(gelu(i), Contains("gelu") && Contains("int64"));
  CHECK_THROWS_WITH(silu(i), Contains("silu") && Contains("int64"));
  CHECK_THROWS_WITH(leaky_relu(i), Contains("leaky_relu") && Contains("int64"));
  CHECK_THROWS_AS(softplus(i), DtypeError);  // PyTorch: "softplus_cpu" not implemented for 'Long'
  CHECK_THROWS_WITH(softplus(b), Contains("softplus") && Contains("bool"));
  CHECK_THROWS_WITH(softplus(randn({2}), 0.0), Contains("softplus") && Contains("beta") && Contains("non-zero"));
  CHECK_THROWS_AS(gelu(i), DtypeError);

  Tensor x = randn({2, 3});
  CHECK_THROWS_AS(gelu(x, "Tanh"), Error);
  CHECK_THROWS_WITH(gelu(x, "erf"), Contains("gelu") && Contains("\"none\"") && Contains("\"tanh\"") &&
                                        Contains("\"erf\""));
  CHECK_THROWS_WITH(gelu_backward(x, x, ""), Contains("gelu_backward") && Contains("approximate"));

  CHECK_THROWS_AS(softmax(x, 2), IndexError);
  CHECK_THROWS_WITH(softmax(x, -3), Contains("softmax") && Contains("dimension out of range"));
  CHECK_THROWS_AS(log_softmax(x, 5), IndexError);

  CHECK_THROWS_AS(softmax_backward(randn({2, 2}), softmax(x, 1), 1), ShapeError);
  CHECK_THROWS_WITH(gelu_backward(randn({3}), x), Contains("gelu_backward") && Contains("same shape"));
}
