// Reading the PyTorch reference fixtures (tests/fixtures/<family>.json, written by
// tools/fixtures/gen_fixtures.py, whose fixture_lib.py documents the format) and checking
// tinytorch's results against them. Each test file supplies a Runner that maps a fixture op name
// onto tinytorch calls; run_family() does the rest: builds inputs (with their view steps), runs
// the op, and compares dtypes, shapes, values, view aliasing and strides, in-place semantics,
// or that tinytorch throws a tt::Error where PyTorch raises.
// Not here: which ops exist (the runners) and printing (test_ref_print.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace tt::reference {

using json = nlohmann::json;

// One fixture input: the contiguous base built from the fixture and the value the op gets
// (the base itself, or the view its "view" steps make of it).
struct Input {
  Tensor base;
  Tensor value;
  bool is_view = false;
};

// float32 tolerance: |actual - expected| <= atol + rtol * |expected|. float64 is always
// compared at rtol = atol = 1e-12; int64 and bool exactly. A case's own "tol" wins for float32.
struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};

json load_family(const std::string& family);
ScalarType parse_dtype(const std::string& name);
Shape parse_shape(const json& j);
std::vector<int64_t> parse_ints(const json& j);
Scalar parse_scalar(const json& s);     // {"kind": ..., "value": ...}
double parse_float(const json& v);      // a number, or "nan", "inf", "-inf"
Tensor make_tensor(const json& spec);   // {"dtype", "shape", "data"} -> a new contiguous tensor
Tensor apply_view(Tensor t, const json& steps);
std::vector<Input> make_inputs(const json& inputs);

// Maps (op, args, inputs) to tinytorch's outputs. In-place ops return the tensor they modified.
using Runner = std::function<std::vector<Tensor>(const std::string& op, const json& args, std::vector<Input>& in)>;

// Runs and checks every case of one fixture family. Failures are reported per case (INFO names
// the case and PyTorch's verdict) and never stop the loop. Returns the number of cases run.
size_t run_family(const std::string& family, const Runner& run, Tolerance f32 = {});

// Calls fn(case) for every case of a family, inside an INFO naming the case.
void for_each_case(const std::string& family, const std::function<void(const json&)>& fn);

}  // namespace tt::reference
