// The registry's callers for the reference runners (registry_call.h): one per row of TT_OPS,
// generated from its parameter list, and the rule that picks the row a fixture case means.
#include "reference/registry_call.h"

#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>

namespace tt::reference {

namespace {

// The case as the callers read it: its arguments, its inputs and the next input to take.
struct Call {
  const json& args;
  std::vector<Input>& in;
  size_t next = 0;
  bool flagged = false;  // the case says which optional tensors it gives (registry_call.h)

  bool given(const char* key) const { return args.contains(key) && !args.at(key).is_null(); }
};

Reduction reduction(const std::string& s) {
  for (int r = 0; r < int(Reduction::NumReductions); ++r)
    if (s == reduction_name(Reduction(r))) return Reduction(r);
  throw std::logic_error("registry call: no reduction '" + s + "'");
}

// A value parameter of type T, read from args[name].
template <typename T>
T read(const json& v) {
  if constexpr (std::is_same_v<T, int64_t>) return v.get<int64_t>();
  else if constexpr (std::is_same_v<T, double>) return parse_float(v);
  else if constexpr (std::is_same_v<T, bool>) return v.get<bool>();
  else if constexpr (std::is_same_v<T, Scalar>) return parse_scalar(v);
  else if constexpr (std::is_same_v<T, Shape>) return parse_shape(v);
  else if constexpr (std::is_same_v<T, IntList>) return parse_ints(v);
  else if constexpr (std::is_same_v<T, DimList>)
    return v.is_number() ? DimList(v.get<int64_t>()) : DimList(parse_ints(v));
  else if constexpr (std::is_same_v<T, ScalarType>) return parse_dtype(v.get<std::string>());
  else if constexpr (std::is_same_v<T, TensorOptions>) return TensorOptions(parse_dtype(v.get<std::string>()));
  else if constexpr (std::is_same_v<T, Reduction>) return reduction(v.get<std::string>());
  else if constexpr (std::is_same_v<T, std::string>) return v.get<std::string>();
  else if constexpr (std::is_same_v<T, std::optional<double>>) return parse_float(v);
  else if constexpr (std::is_same_v<T, std::optional<int64_t>>) return v.get<int64_t>();
  else throw std::logic_error("registry call: no fixture form for this parameter type");
}

// One argument of type T: the next input for a tensor (an optional one as registry_call.h says),
// all that remain for a list, else args[name]; `fallback` gives the row's default when the case
// leaves it out.
template <typename T, typename Default>
T fetch(Call& c, const char* name, bool optional, Default fallback) {
  if constexpr (std::is_same_v<T, Tensor>) {
    const bool wanted = !optional || (c.flagged ? c.args.value(name, false) : c.next < c.in.size());
    return wanted ? c.in.at(c.next++).value : fallback();
  } else if constexpr (std::is_same_v<T, TensorList>) {
    TensorList all;
    for (; c.next < c.in.size(); ++c.next) all.push_back(c.in[c.next].value);
    return all;
  } else {
    const char* key = std::is_same_v<T, TensorOptions> ? "dtype" : name;  // registry_call.h
    return c.given(key) ? read<T>(c.args.at(key)) : fallback();
  }
}

std::vector<Tensor> outputs(const Tensor& t) { return {t}; }
std::vector<Tensor> outputs(const TensorPair& p) { return {std::get<0>(p), std::get<1>(p)}; }
std::vector<Tensor> outputs(const TensorList& l) { return l; }

// One parameter as the picking rule sees it.
struct Param {
  const char* name;   // its key in a case's args: "dtype" for a TensorOptions
  bool tensor;        // takes one input
  bool list;          // takes the inputs that remain
  bool scalar;        // a Scalar (for "side")
  bool has_default;
};

struct Row {
  const char* name;
  std::vector<Param> params;
  std::vector<Tensor> (*call)(Call&);
};

#define TT_REF_HAS_DEFAULT_P false
#define TT_REF_HAS_DEFAULT_D true
#define TT_REF_IS(T, U) std::is_same_v<std::decay_t<T>, U>
#define TT_REF_PARAM(T, n, d, k)                                                                       \
  Param{TT_REF_IS(T, TensorOptions) ? "dtype" : #n, TT_REF_IS(T, Tensor), TT_REF_IS(T, TensorList), \
        TT_REF_IS(T, Scalar), TT_REF_HAS_DEFAULT_##k}
#define TT_REF_FALLBACK_P(T, n, d) \
  [&]() -> std::decay_t<T> { throw std::logic_error("registry call: " #n " not given"); }
#define TT_REF_FALLBACK_D(T, n, d) [&]() -> std::decay_t<T> { std::decay_t<T> v d; return v; }
#define TT_REF_TYPE(T, n, d, k) std::decay_t<T>
#define TT_REF_FETCH(T, n, d, k) fetch<std::decay_t<T>>(c, #n, TT_REF_HAS_DEFAULT_##k, TT_REF_FALLBACK_##k(T, n, d))
// The arguments are fetched inside a braced list, which runs them left to right (inputs in order).
#define TT_REF_ROW(name, surface, autocast, dtypes, ret, params, ...)                                        \
  Row{#name, {TT_PARAMS(TT_REF_PARAM, params)}, [](Call& c) -> std::vector<Tensor> {                          \
        std::tuple<TT_PARAMS(TT_REF_TYPE, params)> a{TT_PARAMS(TT_REF_FETCH, params)};                      \
        return std::apply([](auto&... v) { return outputs(TT_OP_CALL(surface, name, v)); }, a);               \
      }},
#define TT_REF_ROW_UNARY(...) TT_UNARY_AS_OP(TT_REF_ROW, __VA_ARGS__)

const std::vector<Row>& rows() {
  static const std::vector<Row> all = {TT_OPS(TT_REF_ROW)};
  return all;
}

// Does the case name one of the row's optional tensors with true or false?
bool flags_tensors(const Row& row, const json& args) {
  for (const Param& p : row.params)
    if (p.tensor && p.has_default && args.contains(p.name) && args.at(p.name).is_boolean()) return true;
  return false;
}

// Does `row` fit the case? (The rule of registry_call.h.)
bool fits(const Row& row, const json& args, size_t inputs) {
  const bool flagged = flags_tensors(row, args);
  size_t required = 0, optional = 0;
  bool list = false;
  int scalar_at = -1, last_tensor = -1;
  for (size_t i = 0; i < row.params.size(); ++i) {
    const Param& p = row.params[i];
    if (p.tensor || p.list) {
      list = list || p.list;
      if (p.tensor && !p.has_default) ++required;
      if (p.tensor && p.has_default) (flagged ? required : optional) += flagged ? args.value(p.name, false) : 1;
      last_tensor = int(i);
      continue;
    }
    if (p.scalar && std::string(p.name) == "scalar") scalar_at = int(i);
    const bool given = args.contains(p.name) && !args.at(p.name).is_null();
    if (!given && !p.has_default) return false;
  }
  for (const auto& [key, value] : args.items()) {
    if (key == "side" || key == "accumulate") continue;
    bool known = false;
    for (const Param& p : row.params)
      known = known || (key == p.name && ((!p.tensor && !p.list) || (p.tensor && p.has_default && flagged)));
    if (!known) return false;
  }
  if (inputs < required || (!list && inputs > required + optional)) return false;
  if (args.contains("side") && scalar_at >= 0) {
    const bool left = args.at("side") == "left";
    if (left != (scalar_at < last_tensor)) return false;
  }
  return true;
}

// The registry's name for a fixture's op name (TT_OP_ALIASES: "sdpa" is scaled_dot_product_attention).
std::string resolve(const std::string& op) {
#define TT_REF_ALIAS(alias, name) \
  if (op == #alias) return #name;
  TT_OP_ALIASES(TT_REF_ALIAS)
#undef TT_REF_ALIAS
  return op;
}

}  // namespace

bool is_registered(const std::string& name) {
  const std::string op = resolve(name);
  for (const Row& r : rows())
    if (op == r.name) return true;
  return false;
}

std::vector<Tensor> call_registered(const std::string& name, const json& args, std::vector<Input>& in) {
  const std::string op = resolve(name);
  const Row* found = nullptr;
  for (const Row& r : rows()) {
    if (op != r.name || !fits(r, args, in.size())) continue;
    if (found) throw std::logic_error("registry call: two rows of " + op + " fit the arguments " + args.dump());
    found = &r;
  }
  if (!found) throw std::logic_error("registry call: no row of " + op + " fits the arguments " + args.dump());
  Call c{args, in};
  c.flagged = flags_tensors(*found, args);
  return found->call(c);
}

}  // namespace tt::reference
