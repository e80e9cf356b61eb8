// The machinery of the gradient reference tests: see test_ref_grad.h.
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "op_info.h"
#include "reference/test_ref_grad.h"

namespace tt::reference::grad {

namespace {

double parse_value(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
    throw std::runtime_error("fixture: bad float value '" + s + "'");
  }
  return v.get<double>();
}

bool close(double a, double e, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

// Where PyTorch's value is NaN in a "masked" case (a softmax row that is all -inf), tinytorch
// must give the value the case documents: `masked` is that value, an array of values (one per
// element), or null for ordinary cases.
void check_values(const Tensor& actual, const json& exp, const json& masked, double f32_rtol, double f32_atol,
                  const std::string& what) {
  const ScalarType edt = parse_dtype(exp.at("dtype"));
  const Shape es = parse_shape(exp.at("shape"));
  INFO(what << ": tinytorch dtype " << actual.dtype() << " shape " << actual.shape() << "; PyTorch dtype " << edt
            << " shape " << es);
  CHECK(actual.dtype() == edt);
  CHECK(actual.shape() == es);
  if (actual.shape() != es) return;
  const bool exact = !is_floating_point(edt);
  const double rtol = exact ? 0.0 : (edt == kFloat64 ? kF64Tol : f32_rtol);
  const double atol = exact ? 0.0 : (edt == kFloat64 ? kF64Tol : f32_atol);
  std::vector<double> a = actual.to_vector<double>();
  const json& data = exp.at("data");
  size_t bad = 0, first = a.size();
  double first_expected = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = data.at(i).is_boolean() ? double(data.at(i).get<bool>()) : parse_value(data.at(i));
    if (std::isnan(e) && !masked.is_null()) e = parse_value(masked.is_array() ? masked.at(i) : masked);
    if (!close(a[i], e, rtol, atol)) {
      if (first == a.size()) {
        first = i;
        first_expected = e;
      }
      ++bad;
    }
  }
  std::ostringstream os;
  if (bad) {
    os.precision(17);
    os << bad << " of " << a.size() << " elements differ (rtol " << rtol << ", atol " << atol
       << "); first at flat index " << first << ": tinytorch " << a[first] << ", PyTorch " << first_expected;
    if (!masked.is_null()) os << " (where PyTorch has NaN, tinytorch's documented value is expected)";
    if (actual.numel() <= 64) os << "\ntinytorch: " << actual << "\nPyTorch:   " << make_tensor(exp);
  }
  INFO(os.str());
  CHECK(bad == 0);
}

// A leaf as the fixture describes it: the base requires grad (and the op sees the view the
// steps make of it), or the detached view is itself the leaf.
struct Leaves {
  std::vector<Input> inputs;
  std::vector<Tensor> leaf;  // per input; undefined where no gradient is wanted
};

Leaves make_leaves(const json& specs) {
  Leaves l;
  for (const json& spec : specs) {
    Input i;
    i.base = make_tensor(spec);
    const bool rg = spec.value("requires_grad", false);
    const bool view_leaf = spec.value("leaf", std::string("base")) == "view";
    if (rg && !view_leaf) i.base.requires_grad_();
    i.is_view = spec.contains("view") && !spec["view"].empty();
    i.value = i.is_view ? apply_view(i.base, spec["view"]) : i.base;
    if (rg && view_leaf) {
      i.value = i.value.detach();
      i.value.requires_grad_();
    }
    l.leaf.push_back(rg ? (view_leaf ? i.value : i.base) : Tensor());
    l.inputs.push_back(i);
  }
  return l;
}

void run_case(const json& c, const Runner& run) {
  const std::string op = c.at("op");
  const json args = c.contains("args") ? c["args"] : json::object();
  const double rtol = c.contains("tol") ? c["tol"].at("rtol").get<double>() : kF32Tol;
  const double atol = c.contains("tol") ? c["tol"].at("atol").get<double>() : kF32Tol;
  const json masked = c.contains("masked") ? c["masked"] : json();
  INFO((masked.is_null() ? std::string() : "masked case: " + masked.at("why").get<std::string>()));
  Leaves l = make_leaves(c.at("inputs"));

  std::vector<Tensor> out;
  try {
    out = run(op, args, l.inputs);
  } catch (const std::exception& e) {
    FAIL_CHECK("forward: tinytorch threw where PyTorch returns a result: " << e.what());
    return;
  }
  const json& expected = c.at("expected");
  if (out.size() != expected.size()) {
    FAIL_CHECK("forward: tinytorch returned " << out.size() << " outputs, PyTorch " << expected.size());
    return;
  }
  for (size_t i = 0; i < out.size(); ++i)
    check_values(out[i], expected[i], masked.is_null() ? json() : masked.at("output"), rtol, atol,
                 "forward output " + std::to_string(i));

  // The upstream gradients the fixture gives the outputs it differentiates.
  const json& gspecs = c.at("grad_outputs");
  json masked_grad;
  if (!masked.is_null()) {
    masked_grad = masked.at("grad");
    if (masked_grad == "upstream") masked_grad = gspecs.at(0).at("data");
  }
  std::vector<Tensor> roots, seeds;
  bool implicit = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const json& g = gspecs.at(i);
    if (g.is_null()) continue;
    if (!out[i].requires_grad()) {
      FAIL_CHECK("output " << i << " does not require grad: the op recorded no backward");
      return;
    }
    roots.push_back(out[i]);
    if (g.is_string()) {  // "ones": backward() without a gradient
      implicit = true;
      seeds.push_back(Tensor());
    } else {
      seeds.push_back(make_tensor(g));
    }
  }
  std::vector<Tensor> wanted;
  for (const Tensor& t : l.leaf)
    if (t.defined()) wanted.push_back(t);

  std::vector<Tensor> got;
  const bool via_grad = c.at("via") == "grad";
  try {
    if (via_grad) {
      got = tt::autograd::grad(roots, wanted, seeds, false, false, /*allow_unused=*/true);
    } else {
      if (implicit && roots.size() == 1) {
        roots[0].backward();
      } else {
        tt::autograd::backward(roots, seeds);
      }
      for (const Tensor& t : wanted) got.push_back(t.grad());
    }
  } catch (const std::exception& e) {
    FAIL_CHECK("backward (" << (via_grad ? "tt::autograd::grad" : "backward()") << ") threw: " << e.what());
    return;
  }
  if (got.size() != wanted.size()) {
    FAIL_CHECK("tt::autograd::grad returned " << got.size() << " gradients for " << wanted.size() << " inputs");
    return;
  }
  const json& grads = c.at("grads");
  size_t next = 0;
  for (size_t k = 0; k < l.leaf.size(); ++k) {
    if (!l.leaf[k].defined()) continue;
    const Tensor& g = got[next++];
    const bool view_leaf = c.at("inputs")[k].value("leaf", std::string("base")) == "view";
    const std::string what = "gradient of input " + std::to_string(k) + (view_leaf ? " (a strided leaf)" : "");
    if (!g.defined()) {
      FAIL_CHECK(what << ": tinytorch gives none, PyTorch " << make_tensor(grads.at(k)));
      continue;
    }
    check_values(g, grads.at(k), masked_grad, rtol, atol, what);
    if (via_grad) {
      INFO(what << ": tt::autograd::grad must return gradients, not accumulate them into .grad");
      CHECK(!l.leaf[k].grad().defined());
    }
  }
}

}  // namespace

std::vector<Tensor> foundation_op(const std::string& op, const json& args, std::vector<Input>& in) {
  // The elementwise ops come from core/op_table.h (op_info.h); comparisons have no gradient.
  BinaryOp binary_op;
  UnaryOp unary_op;
  if (testing::find_binary(op, binary_op) && !is_comparison(binary_op)) return runners::binary(op, args, in);
  if (testing::find_unary(op, unary_op)) return runners::unary(op, args, in);
  return call_registered(op, args, in);
}

size_t run_family(const std::string& family, const Runner& run) {
  size_t count = 0;
  for_each_case(family, [&](const json& c) {
    ++count;
    run_case(c, run);
  });
  return count;
}

}  // namespace tt::reference::grad
