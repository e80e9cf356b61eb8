// gradcheck and gradgradcheck: numerical (central differences) against analytical (one backward
// per output element) Jacobians. See gradcheck.h for the contract.
#include "tinytorch/autograd/gradcheck.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

#include "tinytorch/autograd/engine.h"
#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_declarations.h"

namespace tt::autograd {

namespace {

// "[1, 2]": the multi-index of element `flat` (row-major) of a tensor of `shape`.
std::string index_string(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = shape.size() - 1; d >= 0; --d) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  std::ostringstream os;
  os << '[';
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << ']';
  return os.str();
}

// The element the view `t` shows at row-major position `flat`: storage + offset + sum(i * stride).
// Writing through it changes exactly that element of the input, contiguous or not.
double* element_ptr(const Tensor& t, int64_t flat) {
  double* p = t.data_ptr<double>();
  int64_t off = 0;
  for (int d = t.dim() - 1; d >= 0; --d) {
    off += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return p + off;
}

// d outputs[i] / d inputs[j] as a dense matrix: rows are input elements, columns output elements.
struct Jacobian {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Jacobian(int64_t r, int64_t c) : rows(r), cols(c), v(size_t(r * c), 0.0) {}
  double& at(int64_t k, int64_t r) { return v[size_t(k * cols + r)]; }
};

bool checked_output(const Tensor& out) { return out.defined() && out.is_floating_point(); }

TensorList call(const GradcheckMultiFn& fn, const TensorList& inputs, const char* who) {
  TensorList outs = fn(inputs);
  TT_CHECK(!outs.empty(), who, ": fn returned no outputs");
  bool any = false;
  for (const Tensor& o : outs) any = any || checked_output(o);
  TT_CHECK(any, who, ": fn returned no defined floating-point output, so there is nothing to check");
  return outs;
}

// The indices of the inputs to check (those requiring grad), after validating every one.
std::vector<size_t> differentiable_inputs(const TensorList& inputs, const char* who) {
  std::vector<size_t> diff;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& x = inputs[j];
    if (!x.defined() || !x.requires_grad()) continue;
    TT_CHECK_DTYPE(x.dtype() == kFloat64, who, ": input ", j, " requires grad but has dtype ", x.dtype(),
                   "; finite differences need float64 inputs (use .to(tt::kFloat64))");
    TT_CHECK_DEVICE(x.device().is_cpu(), who, ": input ", j, " is on ", x.device(),
                    "; gradcheck perturbs inputs on the CPU, move it there first");
    for (int d = 0; d < x.dim(); ++d)
      TT_CHECK(x.stride(d) != 0 || x.size(d) <= 1, who, ": input ", j, " of shape ", x.shape(),
               " has stride 0 in dim ", d, " (an expanded tensor), so its elements overlap and cannot "
               "be perturbed one at a time; pass the unexpanded tensor and expand inside fn");
    diff.push_back(j);
  }
  TT_CHECK(!diff.empty(), who, ": no input requires grad; call requires_grad_() on the inputs to check");
  return diff;
}

// Restores a perturbed element even if fn throws.
struct Restore {
  double* p;
  double orig;
  ~Restore() { *p = orig; }
};

// Small Jacobians are printed in full in a failure report.
constexpr size_t kPrintJacobianEntries = 36;

std::string matrix_string(Jacobian& j) {
  std::ostringstream os;
  for (int64_t k = 0; k < j.rows; ++k) {
    os << (k ? "\n    " : "    ");
    for (int64_t r = 0; r < j.cols; ++r) os << std::setw(12) << std::setprecision(5) << j.at(k, r);
  }
  return os.str();
}

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(10) << v;
  return os.str();
}

// Fills analytical[i][d] row by row: column r of d outputs[i] / d inputs[diff[d]] is the gradient
// that a one-hot seed at element r sends back. Returns a description of what went wrong, if anything.
std::string analytical_jacobians(const TensorList& outputs, const TensorList& inputs, const std::vector<size_t>& diff,
                                 std::vector<std::vector<Jacobian>>& analytical, const char* who) {
  TensorList diff_inputs;
  for (size_t j : diff) diff_inputs.push_back(inputs[j]);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    if (!checked_output(out) || !out.requires_grad()) continue;  // analytical Jacobian stays zero
    for (int64_t r = 0; r < out.numel(); ++r) {
      Tensor seed = zeros(out.shape(), kFloat64);  // one-hot at element r
      seed.data_ptr<double>()[r] = 1.0;
      seed = seed.to(out.dtype());
      TensorList grads;
      try {
        grads = grad({out}, diff_inputs, {seed}, /*retain_graph=*/true, /*create_graph=*/false,
                     /*allow_unused=*/true);
      } catch (const std::exception& e) {
        return detail::concat(who, ": backward of output ", i, " threw: ", e.what());
      }
      for (size_t d = 0; d < diff.size(); ++d) {
        const Tensor& g = grads[d];
        if (!g.defined()) continue;
        const Tensor& x = inputs[diff[d]];
        if (g.shape() != x.shape() || g.dtype() != x.dtype())
          return detail::concat(who, ": backward of output ", i, " returned a gradient of shape ", g.shape(),
                                " and dtype ", g.dtype(), " for input ", diff[d], ", which has shape ", x.shape(),
                                " and dtype ", x.dtype(), "; a gradient must match its input");
        std::vector<double> row = g.to_vector<double>();
        for (int64_t k = 0; k < x.numel(); ++k) analytical[i][d].at(k, r) = row[size_t(k)];
      }
    }
  }
  return "";
}

GradcheckResult run_gradcheck(const GradcheckMultiFn& fn, const TensorList& inputs, double eps, double atol,
                              double rtol, bool raise_exception, const char* who) {
  TT_CHECK(eps > 0, who, ": eps must be positive, got ", eps);
  std::vector<size_t> diff = differentiable_inputs(inputs, who);

  // Reference outputs, with the graph recorded: shapes now, backward below.
  TensorList outputs;
  {
    AutoGradMode grad_on(true);
    outputs = call(fn, inputs, who);
  }
  const size_t n_out = outputs.size();

  // J[i][d] for output i and differentiable input diff[d].
  std::vector<std::vector<Jacobian>> numerical(n_out), analytical(n_out);
  for (size_t i = 0; i < n_out; ++i)
    for (size_t j : diff) {
      int64_t cols = checked_output(outputs[i]) ? outputs[i].numel() : 0;
      numerical[i].emplace_back(inputs[j].numel(), cols);
      analytical[i].emplace_back(inputs[j].numel(), cols);
    }

  // Numerical: perturb each element of each input in place, with grad mode off.
  {
    NoGradGuard no_grad;
    for (size_t d = 0; d < diff.size(); ++d) {
      const Tensor& x = inputs[diff[d]];
      for (int64_t k = 0; k < x.numel(); ++k) {
        double* p = element_ptr(x, k);
        std::vector<std::vector<double>> plus(n_out), minus(n_out);
        {
          Restore restore{p, *p};
          *p = restore.orig + eps;
          TensorList o = call(fn, inputs, who);
          for (size_t i = 0; i < n_out; ++i)
            if (checked_output(outputs[i])) plus[i] = o.at(i).to_vector<double>();
          *p = restore.orig - eps;
          o = call(fn, inputs, who);
          for (size_t i = 0; i < n_out; ++i)
            if (checked_output(outputs[i])) minus[i] = o.at(i).to_vector<double>();
        }
        for (size_t i = 0; i < n_out; ++i) {
          if (!checked_output(outputs[i])) continue;
          TT_CHECK_SHAPE(int64_t(plus[i].size()) == outputs[i].numel() && plus[i].size() == minus[i].size(),
                         who, ": output ", i, " changed its number of elements under perturbation");
          for (int64_t r = 0; r < outputs[i].numel(); ++r)
            numerical[i][d].at(k, r) = (plus[i][r] - minus[i][r]) / (2 * eps);
        }
      }
    }
  }

  // Analytical: one backward per output element, seeded with a one-hot gradient.
  std::ostringstream failures;
  int n_failures = 0;
  auto fail = [&](const std::string& what) { failures << (n_failures++ ? "\n" : "") << what; };
  std::string error = analytical_jacobians(outputs, inputs, diff, analytical, who);
  if (!error.empty()) fail(error);

  // Compare, entry by entry; report the worst entry of every (output, input) pair that fails.
  for (size_t i = 0; i < n_out && error.empty(); ++i) {
    if (!checked_output(outputs[i])) continue;
    for (size_t d = 0; d < diff.size(); ++d) {
      Jacobian& num = numerical[i][d];
      Jacobian& ana = analytical[i][d];
      int64_t bad = 0, worst = -1;
      double worst_ratio = 0;
      for (size_t e = 0; e < num.v.size(); ++e) {
        double n = num.v[e], a = ana.v[e];
        double tol = atol + rtol * std::fabs(n);
        double ratio = (std::isnan(n) || std::isnan(a)) ? std::numeric_limits<double>::infinity()
                                                        : std::fabs(a - n) / tol;
        if (ratio > 1) {
          ++bad;
          if (worst < 0 || ratio > worst_ratio) worst = int64_t(e), worst_ratio = ratio;
        }
      }
      if (bad == 0) continue;
      const Tensor& x = inputs[diff[d]];
      int64_t k = worst / num.cols, r = worst % num.cols;
      double n = num.v[size_t(worst)], a = ana.v[size_t(worst)];
      std::ostringstream m;
      m << who << ": Jacobian mismatch for output " << i << " (shape " << outputs[i].shape()
        << ") with respect to input " << diff[d] << " (shape " << x.shape() << ")\n"
        << "  worst entry: d output" << index_string(r, outputs[i].shape()) << " / d input"
        << index_string(k, x.shape()) << "\n"
        << "    numerical  = " << fmt(n) << "\n"
        << "    analytical = " << fmt(a) << "\n"
        << "    |difference| = " << fmt(std::fabs(a - n)) << " > tolerance atol + rtol * |numerical| = "
        << atol << " + " << rtol << " * " << fmt(std::fabs(n)) << " = " << fmt(atol + rtol * std::fabs(n)) << "\n"
        << "  " << bad << " of " << num.v.size() << " entries are out of tolerance (eps = " << eps << ")";
      if (num.v.size() <= kPrintJacobianEntries)
        m << "\n  numerical Jacobian (row k, column r: d output element r / d input element k, row-major):\n" << matrix_string(num)
          << "\n  analytical Jacobian:\n" << matrix_string(ana);
      if (!outputs[i].requires_grad())
        m << "\n  note: output " << i << " does not require grad, so its analytical Jacobian is zero: "
          << "the op recorded no graph (or its backward is not differentiable, for gradgradcheck)";
      fail(m.str());
    }
  }

  GradcheckResult result;
  result.ok = n_failures == 0;
  result.message = failures.str();
  if (!result.ok && raise_exception) throw GradcheckError(result.message);
  return result;
}

GradcheckMultiFn as_multi(const GradcheckFn& fn) {
  return [fn](const TensorList& xs) { return TensorList{fn(xs)}; };
}

}  // namespace

GradcheckResult gradcheck(const GradcheckMultiFn& fn, const TensorList& inputs, double eps, double atol, double rtol,
                          bool raise_exception) {
  return run_gradcheck(fn, inputs, eps, atol, rtol, raise_exception, "gradcheck");
}

GradcheckResult gradcheck(const GradcheckFn& fn, const TensorList& inputs, double eps, double atol, double rtol,
                          bool raise_exception) {
  return run_gradcheck(as_multi(fn), inputs, eps, atol, rtol, raise_exception, "gradcheck");
}

GradcheckResult gradgradcheck(const GradcheckMultiFn& fn, const TensorList& inputs, double eps, double atol,
                              double rtol, bool raise_exception) {
  std::vector<size_t> diff = differentiable_inputs(inputs, "gradgradcheck");
  TensorList outputs;
  {
    AutoGradMode grad_on(true);
    outputs = call(fn, inputs, "gradgradcheck");
  }
  // One random cotangent v per output that carries a graph; they become extra inputs.
  Generator gen(0x6772616467726164ull);
  std::vector<size_t> used;
  TensorList all = inputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!checked_output(outputs[i]) || !outputs[i].requires_grad()) continue;
    used.push_back(i);
    Tensor v = randn(outputs[i].shape(), kFloat64, &gen);
    v.requires_grad_();
    all.push_back(v);
  }
  TT_CHECK(!used.empty(), "gradgradcheck: no output of fn requires grad, so there is no gradient to check");
  const size_t n_in = inputs.size();
  // (inputs..., v...) -> the gradients of <fn(inputs), v> w.r.t. each differentiable input, with
  // the backward itself recorded (create_graph) so that it can be differentiated once more.
  GradcheckMultiFn first_order = [fn, n_in, diff, used](const TensorList& xs) {
    AutoGradMode grad_on(true);
    TensorList ins(xs.begin(), xs.begin() + n_in);
    TensorList outs = fn(ins);
    TensorList roots, vs(xs.begin() + n_in, xs.end()), wrt;
    for (size_t i : used) roots.push_back(outs.at(i));
    for (size_t j : diff) wrt.push_back(ins[j]);
    TensorList g = grad(roots, wrt, vs, /*retain_graph=*/true, /*create_graph=*/true, /*allow_unused=*/true);
    for (size_t k = 0; k < g.size(); ++k)
      if (!g[k].defined()) g[k] = zeros_like(wrt[k]);
    return g;
  };
  return run_gradcheck(first_order, all, eps, atol, rtol, raise_exception, "gradgradcheck");
}

GradcheckResult gradgradcheck(const GradcheckFn& fn, const TensorList& inputs, double eps, double atol, double rtol,
                              bool raise_exception) {
  return gradgradcheck(as_multi(fn), inputs, eps, atol, rtol, raise_exception);
}

}  // namespace tt::autograd
