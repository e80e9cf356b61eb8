// Fixture loading and checking for the reference suite: see reference_util.h.
#include "reference/reference_util.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace tt::reference {

namespace {


bool same_value(double a, double e, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

// Where and how two tensors of one shape differ, for the failure message.
std::string describe_mismatch(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  std::ostringstream os;
  size_t bad = 0, first = a.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_value(a[i], e[i], rtol, atol)) {
      if (first == a.size()) first = i;
      ++bad;
    }
  }
  os << bad << " of " << a.size() << " elements differ (rtol " << rtol << ", atol " << atol << ")";
  if (first < a.size()) {
    os.precision(17);
    os << "; first at flat index " << first << ": tinytorch " << a[first] << ", PyTorch " << e[first];
  }
  if (actual.numel() <= 64) os << "\ntinytorch: " << actual << "\nPyTorch:   " << expected;
  return os.str();
}

bool exact_ints_equal(const Tensor& actual, const Tensor& expected) {
  return actual.to_vector<int64_t>() == expected.to_vector<int64_t>();
}

// A large output, given as checksums and samples: the sums must agree to the tolerance scaled
// by the sum of magnitudes (exactly, up to rounding, for the exact pattern inputs).
void check_summary(const Tensor& actual, const json& summary, double rtol, double atol) {
  std::vector<double> a = actual.to_vector<double>();
  double sum = 0, sum_abs = 0, wsum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sum += a[i];
    sum_abs += std::fabs(a[i]);
    wsum += a[i] * double(int64_t(i % 13) - 6);
  }
  const double e_sum = summary.at("sum"), e_abs = summary.at("sum_abs"), e_wsum = summary.at("wsum");
  // Each element may be off by atol + rtol * |v|, and wsum weighs it by up to 6; 1e-12 covers
  // the double accumulation order.
  const double slack = atol * double(a.size()) + std::max(rtol, 1e-12) * e_abs;
  INFO("checksums: tinytorch sum " << sum << " sum_abs " << sum_abs << " wsum " << wsum << "; PyTorch sum "
                                   << e_sum << " sum_abs " << e_abs << " wsum " << e_wsum << " (slack " << slack << ")");
  CHECK(std::fabs(sum - e_sum) <= slack);
  CHECK(std::fabs(sum_abs - e_abs) <= slack);
  CHECK(std::fabs(wsum - e_wsum) <= 6 * slack);
  for (const json& s : summary.at("samples")) {
    size_t i = s.at(0).get<size_t>();
    double e = s.at(1).is_boolean() ? double(s.at(1).get<bool>()) : parse_float(s.at(1));
    INFO("sample at flat index " << i << ": tinytorch " << a.at(i) << ", PyTorch " << e);
    CHECK(same_value(a.at(i), e, rtol, atol));
  }
}

void check_tensor(const Tensor& actual, const json& exp, Tolerance tol, const std::string& what) {
  const ScalarType edt = parse_dtype(exp.at("dtype"));
  const Shape es = parse_shape(exp.at("shape"));
  INFO(what << ": tinytorch dtype " << actual.dtype() << " shape " << actual.shape() << "; PyTorch dtype "
            << edt << " shape " << es);
  CHECK(actual.dtype() == edt);
  CHECK(actual.shape() == es);
  if (actual.shape() != es) return;
  if (exp.contains("summary")) {
    bool exact = !is_floating_point(edt);
    check_summary(actual, exp["summary"], exact ? 0.0 : (edt == kFloat64 ? 1e-12 : tol.rtol),
                  exact ? 0.0 : (edt == kFloat64 ? 1e-12 : tol.atol));
    return;
  }
  Tensor expected = make_tensor(exp);
  bool ok;
  double rtol = 0, atol = 0;
  if (!actual.is_floating_point() && !expected.is_floating_point()) {
    ok = exact_ints_equal(actual, expected);
  } else {
    bool f64 = edt == kFloat64;
    rtol = f64 ? 1e-12 : (is_floating_point(edt) ? tol.rtol : 0.0);
    atol = f64 ? 1e-12 : (is_floating_point(edt) ? tol.atol : 0.0);
    ok = tt::testing::allclose(actual, expected, rtol, atol);
  }
  INFO((ok ? std::string() : describe_mismatch(actual, expected, rtol, atol)));
  CHECK(ok);
}

// A view op's result must share storage with its input exactly when PyTorch's does, and a
// shared result must have PyTorch's strides (size-1 dims excepted: any stride is right there)
// and offset. Empty results are not checked: no storage is read through them.
void check_aliasing(const Tensor& actual, const json& exp, const Input& first_input, const std::string& what) {
  if (!exp.contains("aliases") || actual.numel() == 0) return;
  bool want = exp["aliases"].get<bool>();
  bool shares = actual.storage() == first_input.value.storage();
  INFO(what << ": PyTorch " << (want ? "returns a view of" : "copies") << " the input; tinytorch "
            << (shares ? "shares its storage" : "does not share its storage"));
  CHECK(shares == want);
  if (!(want && shares && exp.contains("strides"))) return;
  Shape es = parse_shape(exp["strides"]);
  INFO("strides: tinytorch " << actual.strides() << ", PyTorch " << es << "; offset: tinytorch "
                             << actual.storage_offset() << ", PyTorch " << exp.at("offset").get<int64_t>());
  bool strides_ok = es.size() == actual.dim();
  for (int d = 0; strides_ok && d < actual.dim(); ++d)
    if (actual.size(d) > 1 && actual.stride(d) != es[d]) strides_ok = false;
  CHECK(strides_ok);
  CHECK(actual.storage_offset() == exp.at("offset").get<int64_t>());
}

void check_error_case(const json& c, const Runner& run, std::vector<Input>& in) {
  const std::string op = c.at("op");
  const json args = c.contains("args") ? c["args"] : json::object();
  std::vector<Tensor> before;
  for (const Input& i : in) before.push_back(i.base.clone());
  INFO((c.contains("deviation") ? "deliberate difference from PyTorch, tinytorch must throw: " +
                                      c["deviation"].get<std::string>()
                                : "PyTorch raises " + c.at("error").get<std::string>()));
  bool threw_tt = false;
  try {
    std::vector<Tensor> out = run(op, args, in);
    std::ostringstream os;
    for (const Tensor& t : out) os << "\n  " << t.dtype() << " " << t.shape() << " " << t;
    FAIL_CHECK("tinytorch returned instead of throwing a tt::Error:" << os.str());
  } catch (const tt::Error&) {
    threw_tt = true;
  } catch (const std::exception& e) {
    FAIL_CHECK("tinytorch threw a non-tt::Error: " << e.what());
  }
  if (!threw_tt) return;
  // Bad input changes nothing (DESIGN.md, Errors).
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("input " << i << " was modified by a call that threw");
    CHECK(tt::testing::allclose(in[i].base, before[i], 0.0, 0.0));
  }
}

}  // namespace

double parse_float(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw std::runtime_error("fixture: bad float value '" + s + "'");
  }
  return v.get<double>();
}

json load_family(const std::string& family) {
  const std::string path = std::string(TT_SOURCE_DIR) + "/tests/fixtures/" + family + ".json";
  std::ifstream f(path);
  INFO("fixture file " << path << " (regenerate with /usr/bin/python3 tools/fixtures/gen_fixtures.py)");
  REQUIRE(f.good());
  return json::parse(f);
}

ScalarType parse_dtype(const std::string& name) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  if (name == "int64") return kInt64;
  if (name == "bool") return kBool;
  if (name == "bfloat16") return kBFloat16;
  throw std::runtime_error("fixture: unknown dtype '" + name + "'");
}

Shape parse_shape(const json& j) {
  Shape s;
  for (const json& v : j) s.push_back(v.get<int64_t>());
  return s;
}

std::vector<int64_t> parse_ints(const json& j) {
  std::vector<int64_t> v;
  for (const json& x : j) v.push_back(x.get<int64_t>());
  return v;
}

Scalar parse_scalar(const json& s) {
  const std::string kind = s.at("kind");
  const json& v = s.at("value");
  if (kind == "float") return Scalar(parse_float(v));
  if (kind == "int") return Scalar(v.get<int64_t>());
  if (kind == "bool") return Scalar(v.get<bool>());
  throw std::runtime_error("fixture: unknown scalar kind '" + kind + "'");
}

// Element i of a pattern input: ((i * mul + add) % mod - sub) / div (see fixture_lib.py).
static std::vector<double> pattern_values(const json& p, int64_t n) {
  const int64_t mul = p.at("mul"), add = p.at("add"), mod = p.at("mod"), sub = p.at("sub"), div = p.at("div");
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double((i * mul + add) % mod - sub) / double(div);
  return v;
}

Tensor make_tensor(const json& spec) {
  const ScalarType dtype = parse_dtype(spec.at("dtype"));
  const Shape shape = parse_shape(spec.at("shape"));
  if (spec.contains("pattern")) {
    std::vector<double> v = pattern_values(spec["pattern"], numel_of(shape));
    switch (dtype) {
      case kFloat32: return tt::tensor(std::vector<float>(v.begin(), v.end()), shape, kFloat32);
      case kFloat64: return tt::tensor(v, shape, kFloat64);
      case kBFloat16: return tt::tensor(v, shape, kFloat64).to(kBFloat16);  // the pattern is exact in bf16
      case kInt64: return tt::tensor(std::vector<int64_t>(v.begin(), v.end()), shape, kInt64);
      case kBool: {
        std::vector<bool> b;
        for (double x : v) b.push_back(x != 0);
        return tt::tensor(b, shape, kBool);
      }
      default: throw std::runtime_error("fixture: unsupported dtype");
    }
  }
  const json& data = spec.at("data");
  switch (dtype) {
    case kFloat32: {
      std::vector<float> v;
      for (const json& x : data) v.push_back(static_cast<float>(parse_float(x)));
      return tt::tensor(v, shape, kFloat32);
    }
    case kFloat64: {
      std::vector<double> v;
      for (const json& x : data) v.push_back(parse_float(x));
      return tt::tensor(v, shape, kFloat64);
    }
    case kBFloat16: {  // written as the exact doubles of bf16 values: the conversion is exact
      std::vector<double> v;
      for (const json& x : data) v.push_back(parse_float(x));
      return tt::tensor(v, shape, kFloat64).to(kBFloat16);
    }
    case kInt64: {
      std::vector<int64_t> v;
      for (const json& x : data) v.push_back(x.get<int64_t>());
      return tt::tensor(v, shape, kInt64);
    }
    case kBool: {
      std::vector<bool> v;
      for (const json& x : data) v.push_back(x.get<bool>());
      return tt::tensor(v, shape, kBool);
    }
    default:
      throw std::runtime_error("fixture: unsupported dtype");
  }
}

Tensor apply_view(Tensor t, const json& steps) {
  for (const json& step : steps) {
    const std::string name = step.at(0);
    if (name == "transpose") {
      t = t.transpose(step.at(1).get<int64_t>(), step.at(2).get<int64_t>());
    } else if (name == "permute") {
      t = t.permute(parse_shape(step.at(1)));
    } else if (name == "slice") {
      int64_t end = step.at(3).is_null() ? kEnd : step.at(3).get<int64_t>();
      t = t.slice(step.at(1).get<int64_t>(), step.at(2).get<int64_t>(), end, step.at(4).get<int64_t>());
    } else if (name == "expand") {
      t = t.expand(parse_shape(step.at(1)));
    } else if (name == "select") {
      t = t.select(step.at(1).get<int64_t>(), step.at(2).get<int64_t>());
    } else if (name == "unsqueeze") {
      t = t.unsqueeze(step.at(1).get<int64_t>());
    } else {
      throw std::runtime_error("fixture: unknown view step '" + name + "'");
    }
  }
  return t;
}

std::vector<Input> make_inputs(const json& inputs) {
  std::vector<Input> in;
  for (const json& spec : inputs) {
    Input i;
    i.base = make_tensor(spec);
    i.is_view = spec.contains("view") && !spec["view"].empty();
    i.value = i.is_view ? apply_view(i.base, spec["view"]) : i.base;
    in.push_back(i);
  }
  return in;
}

void for_each_case(const std::string& family, const std::function<void(const json&)>& fn) {
  const json doc = load_family(family);
  const json& cases = doc.at("cases");
  REQUIRE(!cases.empty());
  for (const json& c : cases) {
    INFO("fixture " << family << ".json, case " << c.at("name").get<std::string>());
    try {
      fn(c);
    } catch (const std::exception& e) {
      FAIL_CHECK("unexpected exception: " << e.what());
    }
  }
}

size_t run_family(const std::string& family, const Runner& run, Tolerance family_tol) {
  size_t count = 0;
  for_each_case(family, [&](const json& c) {
    Tolerance f32 = family_tol;
    ++count;
    const std::string op = c.at("op");
    const json args = c.contains("args") ? c["args"] : json::object();
    std::vector<Input> in = make_inputs(c.at("inputs"));
    if (c.contains("error")) {
      check_error_case(c, run, in);
      return;
    }
    if (c.contains("tol")) f32 = {c["tol"].at("rtol").get<double>(), c["tol"].at("atol").get<double>()};
    const bool inplace = op.back() == '_';
    const uint64_t version_before = in.empty() ? 0 : in[0].value.version();
    std::vector<Tensor> out;
    try {
      out = run(op, args, in);
    } catch (const std::exception& e) {
      FAIL_CHECK("tinytorch threw where PyTorch returns a result: " << e.what());
      return;
    }
    if (inplace) {
      INFO("in-place op: must return the tensor it modified and bump its version");
      CHECK(out.size() == 1);
      if (out.empty()) return;
      CHECK(out[0].is_same(in[0].value));
      CHECK(in[0].value.version() > version_before);
      if (in[0].is_view) out.push_back(in[0].base);  // the write must reach the base
    }
    const json& expected = c.at("expected");
    if (out.size() != expected.size()) {
      FAIL_CHECK("tinytorch returned " << out.size() << " outputs, PyTorch " << expected.size());
      return;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      std::string what = "output " + std::to_string(i);
      check_tensor(out[i], expected[i], f32, what);
      if (!in.empty()) check_aliasing(out[i], expected[i], in[0], what);
    }
  });
  return count;
}

}  // namespace tt::reference
