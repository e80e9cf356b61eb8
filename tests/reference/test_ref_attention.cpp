// Attention against PyTorch: scaled_dot_product_attention and attention_weights (attention.json,
// through the gradient machinery of test_ref_grad.h), and nn::MultiHeadAttention and
// nn::TransformerBlock (attention_modules.json: the fixture's parameters are loaded into a module
// with load_state_dict under our names, and the gradients of the inputs and of every parameter
// are compared). Masks of every kind and shape, causal with Tq != Tk, GQA/MQA, rows with nothing
// to attend to (zeros, where PyTorch gives NaN), odd sizes and ranks, strided inputs. The cases
// and the PyTorch side are tools/fixtures/cases_attention.py (run_sdpa_torch, the twin of
// attention_op) and cases_attention_modules.py (run_module_torch, the twin of run_module_case).
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <tinytorch/nn/attention.h>
#include <tinytorch/nn/transformer.h>
#include <tinytorch/ops/attention.h>

#include "reference/registry_call.h"
#include "reference/test_ref_grad.h"

namespace tt::reference {

namespace {

// inputs: sdpa [q, k, v, mask?], attention_weights [q, k, mask?]; args "mask" ("bool" or "float":
// the last input is attn_mask), "is_causal", "scale", "enable_gqa". The ops run through their
// registry rows ("sdpa" is an alias of scaled_dot_product_attention, TT_OP_ALIASES).
std::vector<Tensor> attention_op(const std::string& op, const json& args, std::vector<Input>& in) {
  json a = args;
  if (a.contains("mask")) {
    a.erase("mask");
    a["attn_mask"] = true;
  }
  return call_registered(op, a, in);
}

// |actual - expected| <= tol * (1 + |expected|) elementwise (infinities must match exactly), with
// the dtype and shape; a failure names the first differing element.
void check_close(const Tensor& actual, const json& spec, const std::string& what) {
  const Tensor expected = make_tensor(spec);
  INFO(what << ": tinytorch dtype " << actual.dtype() << " shape " << actual.shape() << "; PyTorch dtype "
            << expected.dtype() << " shape " << expected.shape());
  CHECK(actual.dtype() == expected.dtype());
  CHECK(actual.shape() == expected.shape());
  if (actual.shape() != expected.shape()) return;
  const double tol = expected.dtype() == kFloat64 ? grad::kF64Tol : grad::kF32Tol;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool ok = std::isinf(e[i]) ? a[i] == e[i] : std::fabs(a[i] - e[i]) <= tol * (1 + std::fabs(e[i]));
    if (!ok && bad++ == 0) first = i;
  }
  std::ostringstream os;
  if (bad) {
    os.precision(17);
    os << bad << " of " << a.size() << " elements differ (tolerance " << tol << "); first at flat index " << first
       << ": tinytorch " << a[first] << ", PyTorch " << e[first];
  }
  INFO(os.str());
  CHECK(bad == 0);
}

// One module case: the module, its forward on the fixture's activations and masks, and the
// tensors whose gradients the fixture holds (per input, undefined where it holds none).
struct ModuleRun {
  std::shared_ptr<nn::Module> module;
  std::vector<Tensor> outputs;
  std::vector<Tensor> wanted;
};

using Activations = std::map<std::string, Tensor>;  // activations and masks by role

Tensor role(const Activations& act, const char* name) {
  auto it = act.find(name);
  return it == act.end() ? Tensor() : it->second;
}

std::shared_ptr<nn::Module> make_mha(int64_t E, int64_t H, const json& a) {
  nn::MultiHeadAttentionOptions o;
  o.bias(a.value("bias", true)).kdim(a.value("kdim", int64_t{0})).vdim(a.value("vdim", int64_t{0}));
  o.num_kv_heads(a.value("num_kv_heads", int64_t{0})).batch_first(a.value("batch_first", true));
  o.qk_norm(a.value("qk_norm", false));
  return std::make_shared<nn::MultiHeadAttention>(E, H, o);
}

std::vector<Tensor> forward_mha(const nn::Module& m, const json& a, const Activations& act) {
  Tensor q = role(act, "query"), k = role(act, "key"), v = role(act, "value");
  if (act.count("x")) q = k = v = role(act, "x");
  if (act.count("kv")) k = v = role(act, "kv");
  nn::MultiHeadAttentionForward f;
  f.attn_mask = role(act, "attn_mask");
  f.key_padding_mask = role(act, "key_padding_mask");
  f.is_causal = a.value("is_causal", false);
  f.need_weights = a.value("need_weights", true);
  f.average_attn_weights = a.value("average_attn_weights", true);
  auto [y, w] = static_cast<const nn::MultiHeadAttention&>(m)(q, k, v, f);
  if (f.need_weights) return {y, w};
  return {y};
}

std::shared_ptr<nn::Module> make_block(int64_t E, int64_t H, const json& a) {
  nn::TransformerBlockOptions o;
  o.bias(a.value("bias", true)).num_kv_heads(a.value("num_kv_heads", int64_t{0}));
  o.mlp_ratio(a.value("mlp_ratio", int64_t{4}));
  return std::make_shared<nn::TransformerBlock>(E, H, o);
}

std::vector<Tensor> forward_block(const nn::Module& m, const json& a, const Activations& act) {
  const auto& block = static_cast<const nn::TransformerBlock&>(m);
  return {block(role(act, "x"), role(act, "attn_mask"), a.value("is_causal", true))};
}

// The modules of the family by their names in the fixtures (modules, not ops of the registry):
// each built from the case's args and run forward on its activations. The PyTorch twins are
// cases_attention_modules.py's MODULES.
struct ModuleKind {
  std::shared_ptr<nn::Module> (*make)(int64_t embed_dim, int64_t num_heads, const json& args);
  std::vector<Tensor> (*forward)(const nn::Module& m, const json& args, const Activations& act);
};
const std::map<std::string, ModuleKind>& module_kinds() {
  static const std::map<std::string, ModuleKind> kinds = {{"mha", {make_mha, forward_mha}},
                                                         {"block", {make_block, forward_block}}};
  return kinds;
}

ModuleRun run_module(const std::string& op, const json& a, const json& specs) {
  const json& roles = a.at("roles");
  const ModuleKind& kind = module_kinds().at(op);
  Activations act;
  nn::StateDict state;
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < specs.size(); ++k) {
    const std::string role = roles.at(k);
    Tensor t = make_tensor(specs[k]);
    if (role.rfind("param:", 0) == 0) {
      state.insert(role.substr(6), t);
    } else {
      if (specs[k].value("requires_grad", false)) t.requires_grad_();
      act[role] = t;
    }
    inputs.push_back(t);
  }
  ModuleRun r;
  r.module = kind.make(a.at("embed_dim"), a.at("num_heads"), a);
  r.module->to(inputs.at(0).dtype());
  r.module->load_state_dict(state);  // strict: the names must be exactly tinytorch's
  const nn::StateDict params = r.module->named_parameters();
  for (size_t k = 0; k < specs.size(); ++k) {
    const std::string role = roles.at(k);
    const bool param = role.rfind("param:", 0) == 0;
    r.wanted.push_back(param ? params[role.substr(6)] : (inputs[k].requires_grad() ? inputs[k] : Tensor()));
  }
  r.outputs = kind.forward(*r.module, a, act);
  return r;
}

void run_module_case(const json& c) {
  const std::string op = c.at("op");
  ModuleRun r = run_module(op, c.at("args"), c.at("inputs"));
  const json& expected = c.at("expected");
  if (r.outputs.size() != expected.size() || !r.outputs[0].defined() || !r.outputs.back().defined()) {
    FAIL_CHECK("tinytorch returned " << r.outputs.size() << " outputs (or an undefined one), PyTorch "
                                     << expected.size());
    return;
  }
  for (size_t i = 0; i < r.outputs.size(); ++i) check_close(r.outputs[i], expected[i], "output " + std::to_string(i));

  std::vector<Tensor> roots, seeds, wanted;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    if (!r.outputs[i].requires_grad()) {
      FAIL_CHECK("output " << i << " does not require grad");
      return;
    }
    roots.push_back(r.outputs[i]);
    seeds.push_back(make_tensor(c.at("grad_outputs").at(i)));
  }
  for (const Tensor& t : r.wanted)
    if (t.defined()) wanted.push_back(t);
  const std::vector<Tensor> got = tt::autograd::grad(roots, wanted, seeds, false, false, /*allow_unused=*/true);
  if (got.size() != wanted.size()) {
    FAIL_CHECK("tt::autograd::grad returned " << got.size() << " gradients for " << wanted.size() << " inputs");
    return;
  }
  const json& grads = c.at("grads");
  const json& roles = c.at("args").at("roles");
  size_t next = 0;
  for (size_t k = 0; k < r.wanted.size(); ++k) {
    const std::string what = "gradient of " + roles.at(k).get<std::string>();
    INFO(what);
    CHECK(r.wanted[k].defined() == !grads.at(k).is_null());
    if (!r.wanted[k].defined() || grads.at(k).is_null()) continue;
    const Tensor& g = got.at(next++);
    CHECK(g.defined());
    if (g.defined()) check_close(g, grads.at(k), what);
  }
}

}  // namespace

}  // namespace tt::reference

TEST_CASE("reference: scaled_dot_product_attention and attention_weights match PyTorch, values and gradients",
          "[reference][attention]") {
  using namespace tt::reference;
  CHECK(grad::run_family("attention", attention_op) == 70);
}

TEST_CASE("reference: MultiHeadAttention and TransformerBlock match PyTorch, values and gradients of inputs and "
          "parameters",
          "[reference][attention]") {
  using namespace tt::reference;
  size_t n = 0;
  for_each_case("attention_modules", [&](const json& c) {
    ++n;
    run_module_case(c);
  });
  CHECK(n == 56);
}
