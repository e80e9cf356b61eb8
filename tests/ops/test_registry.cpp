// The op registry (core/op_registry.h) against the ops it describes: every row's dtype rule is
// checked by calling the op, with arguments made from the row's parameter list, on float64, int64
// and bool inputs. Rows whose arguments the maker cannot guess (an index tensor, a target, a
// shape that must match) are counted and left to their own suites; at least the number below must
// be checked, so a row cannot quietly fall out.
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "test_util.h"

using namespace tt;
using tt::testing::allclose;

namespace {

// Arguments for one call: every tensor parameter gets `x`, the rest a small valid value.
template <typename T>
T make(const Tensor& x) {
  if constexpr (std::is_same_v<T, Tensor>) return x;
  else if constexpr (std::is_same_v<T, TensorList>) return {x, x};
  else if constexpr (std::is_same_v<T, int64_t>) return 0;
  else if constexpr (std::is_same_v<T, double>) return 0.5;
  else if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (std::is_same_v<T, Scalar>)  // of the input's kind: bool.add_(1) is refused
    return x.dtype() == kBool ? Scalar(true) : x.is_floating_point() ? Scalar(1.0) : Scalar(1);
  else if constexpr (std::is_same_v<T, Shape>) return x.shape();
  else if constexpr (std::is_same_v<T, DimList>) return DimList(0);
  else if constexpr (std::is_same_v<T, IntList>) return IntList{1, 1};
  else if constexpr (std::is_same_v<T, ScalarType>) return x.dtype();
  else if constexpr (std::is_same_v<T, TensorOptions>) return TensorOptions(x.dtype());
  else if constexpr (std::is_same_v<T, std::string>) return "none";
  else return T{};
}

Tensor first(const Tensor& t) { return t; }
Tensor first(const TensorPair& p) { return std::get<0>(p); }
Tensor first(const TensorList& l) { return l.empty() ? Tensor() : l[0]; }

bool any(std::initializer_list<bool> flags) {
  for (bool f : flags)
    if (f) return true;
  return false;
}

struct Row {
  const char* name;
  const char* dtypes;
  bool takes_tensor;
  Tensor (*call)(const Tensor& x);
};

#define TT_TEST_TYPE(T, n, d, k) std::decay_t<T>
#define TT_TEST_MAKE(T, n, d, k) make<std::decay_t<T>>(x)
#define TT_TEST_TENSOR(T, n, d, k) std::is_same_v<std::decay_t<T>, Tensor>
#define TT_TEST_ROW(name, surface, autocast, dtypes, ret, params, ...)                                        \
  Row{#name, #dtypes, any({TT_PARAMS(TT_TEST_TENSOR, params)}), [](const Tensor& x) -> Tensor {               \
        std::tuple<TT_PARAMS(TT_TEST_TYPE, params)> a{TT_PARAMS(TT_TEST_MAKE, params)};                      \
        return std::apply([](auto&... v) { return first(TT_OP_CALL(surface, name, v)); }, a);                 \
      }},
#define TT_TEST_ROW_UNARY(...) TT_UNARY_AS_OP(TT_TEST_ROW, __VA_ARGS__)

const std::vector<Row>& rows() {
  static const std::vector<Row> all = {TT_OPS(TT_TEST_ROW)};
  return all;
}

// x: [2, 2] of `dtype`, values 1..4 (true for bool).
Tensor input(ScalarType dtype) { return arange(1, 5, 1, kFloat64).reshape({2, 2}).to(dtype); }

}  // namespace

TEST_CASE("op registry: every row's dtype rule holds where its arguments can be made", "[ops][registry]") {
  size_t checked = 0, unmade = 0;
  for (const Row& row : rows()) {
    if (!row.takes_tensor) continue;  // factories: no input dtype to rule on
    INFO("op " << row.name << ", rule " << row.dtypes);
    bool made = true;
    try {
      row.call(input(kFloat64));
    } catch (const Error&) {
      made = false;  // the made-up arguments do not fit this op (shapes, index tensors, ...)
    }
    if (!made) {
      ++unmade;
      continue;
    }
    ++checked;
    const std::string rule = row.dtypes;
    for (ScalarType dtype : {kInt64, kBool}) {
      INFO("input dtype " << dtype);
      if (rule == "FloatOnly") {
        CHECK_THROWS_AS(row.call(input(dtype)), DtypeError);
      } else if (rule == "Floating") {
        Tensor out;
        CHECK_NOTHROW(out = row.call(input(dtype)));
        if (out.defined()) CHECK(out.dtype() == kFloat32);
      } else if (rule == "NoBool" && dtype == kBool) {
        CHECK_THROWS_AS(row.call(input(dtype)), DtypeError);
      } else {
        CHECK_NOTHROW(row.call(input(dtype)));
      }
    }
  }
  INFO(checked << " rows checked, " << unmade << " left to their suites");
  CHECK(checked >= 60);
}

TEST_CASE("op registry: a Method row's method is its function", "[ops][registry]") {
  Tensor x = input(kFloat64);
  CHECK(allclose(x.sum(1, true), tt::sum(x, 1, true), 0, 0));
  CHECK(allclose(x.t(), tt::t(x), 0, 0));
  CHECK(allclose(x.split(IntList{1, 1}, 1)[1], tt::split(x, IntList{1, 1}, 1)[1], 0, 0));
  CHECK(allclose(x.flatten().dot(x.flatten()), tt::dot(x.flatten(), x.flatten()), 0, 0));
  CHECK(allclose(x.slice(0, 1), x.slice(0, 1, kEnd, 1), 0, 0));  // end defaults to kEnd
}
