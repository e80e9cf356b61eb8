// Module 05 walkthrough: from loose tensors to layers. A Linear layer computed by hand, forward
// and backward; a small model as a tree of modules with dotted parameter names; counting and
// printing; PyTorch's default initialization and a measured table of what other initializations
// do to activations and gradients 30 layers deep; Sequential; Dropout; train and eval; state_dict
// round trips; and the cost of a Linear in FLOPs and time. Run it with `tools/tt walkthrough 05`
// (or build-*/modules/walkthrough_05). Each step prints its code (after ">>>") and the result.
// Each numbered section is one function; `--step N` reruns section N alone, `--list` lists them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// The walkthrough's model: subtract a stored input mean, then Linear -> ReLU -> Dropout -> Linear.
// input_mean is a buffer: saved with the model, never trained.
struct TinyMLP : tt::nn::Module {
  TinyMLP() {
    input_mean = register_buffer("input_mean", tt::zeros({4}));
    fc1 = register_module("fc1", std::make_shared<tt::nn::Linear>(4, 8));
    drop = register_module("drop", std::make_shared<tt::nn::Dropout>(0.5));
    fc2 = register_module("fc2", std::make_shared<tt::nn::Linear>(8, 3));
  }
  // x: [B, 4] -> [B, 3]
  tt::Tensor forward(const tt::Tensor& x) const { return fc2->forward(drop->forward(fc1->forward(x - input_mean).relu())); }

  tt::Tensor input_mean;
  std::shared_ptr<tt::nn::Linear> fc1, fc2;
  std::shared_ptr<tt::nn::Dropout> drop;
};

// ["a", "b", "c"] for a list of names.
std::string names(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
  return s + "]";
}

// The standard deviation of a tensor's elements, computed in float64 (activations 30 layers deep
// can be large enough that their squares overflow float32).
double std64(const tt::Tensor& t) { return t.detach().to(tt::kFloat64).std().item<double>(); }

// A label right-aligned in 10 columns, as the numbers of the initialization table.
std::string fmt10(const std::string& label) { return std::string(10 - std::min<size_t>(10, label.size()), ' ') + label; }

// One row of the initialization table: a name and a way to fill one weight of the stack.
struct InitRule {
  std::string name;
  std::function<void(tt::Tensor&)> fill;
};

// Runs a batch of unit-variance inputs through `stack` (Linear layers) with `act` after each,
// and prints the std of the activations after some layers, then the std of the weight gradient
// of the first and the last layer for a random upstream gradient.
void measure_stack(const tt::nn::ModuleList& stack, const std::function<tt::Tensor(const tt::Tensor&)>& act,
                   const InitRule& rule) {
  const int64_t depth = int64_t(stack.size()), width = stack.ptr<tt::nn::Linear>(0)->options.in_features();
  tt::manual_seed(1);
  for (int64_t i = 0; i < depth; ++i) {
    std::shared_ptr<tt::nn::Linear> fc = stack.ptr<tt::nn::Linear>(i);
    rule.fill(fc->weight);
    tt::nn::init::zeros_(fc->bias);
  }
  tt::Tensor h = tt::randn({256, width});
  std::string line = "    " + rule.name + std::string(18 - std::min<size_t>(18, rule.name.size()), ' ');
  for (int64_t i = 0; i < depth; ++i) {
    h = act(stack.ptr<tt::nn::Linear>(i)->forward(h));
    const int64_t layer = i + 1;
    if (layer == 1 || layer == 2 || layer == 5 || layer == 10 || layer == 20 || layer == 30) line += fmt("%10.2g", std64(h));
  }
  (h * tt::randn(h.shape())).sum().backward();
  line += "  |" + fmt("%10.2g", std64(stack.ptr<tt::nn::Linear>(0)->weight.grad())) +
          fmt("%10.2g", std64(stack.ptr<tt::nn::Linear>(depth - 1)->weight.grad()));
  std::cout << line << "\n";
  for (int64_t i = 0; i < depth; ++i) stack.ptr<tt::nn::Linear>(i)->zero_grad();
}

// -----------------------------------------------------------------------------------------------

// The small values step 1 gives its Linear(3, 2), so that every output can be checked by eye.
void set_small_values(tt::nn::Linear& fc) {
  tt::NoGradGuard no_grad;
  fc.weight.copy_(tt::tensor({{1.0, -1.0, 2.0}, {0.0, 3.0, 1.0}}));
  fc.bias.copy_(tt::tensor({0.5, -1.0}));
}

void step_1_linear_by_hand() {
  say("Linear(in, out) holds a weight [out, in] and a bias [out], both parameters (leaves that\n"
      "require grad), and computes y = x W^T + b over the last dim.");
  RUN(tt::nn::Linear fc(3, 2));
  SHOW(fc.weight.shape());
  SHOW(fc.bias.shape());
  SHOW(fc.weight.requires_grad());
  say("Give it small values so every output can be checked by eye. Writing into a parameter\n"
      "outside any graph is refused (module 04), so the writes go under a NoGradGuard:");
  SHOW_ERROR(fc.bias.copy_(tt::tensor({0.5, -1.0})));
  std::cout << ">>> { tt::NoGradGuard no_grad;\n"
               "      fc.weight.copy_(tt::tensor({{1.0, -1.0, 2.0}, {0.0, 3.0, 1.0}}));\n"
               "      fc.bias.copy_(tt::tensor({0.5, -1.0})); }\n";
  set_small_values(fc);
  RUN(tt::Tensor x = tt::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}}));
  SHOW(fc(x));
  say("Row 0: [1, 2, 3] . [1, -1, 2] + 0.5 = 5.5   and   [1, 2, 3] . [0, 3, 1] - 1 = 8.\n"
      "Row 1: [-1, 0, 1] . [1, -1, 2] + 0.5 = 1.5  and   [-1, 0, 1] . [0, 3, 1] - 1 = 0.\n"
      "Output unit j owns row j of the weight. The same numbers with module 01-02 ops:");
  SHOW(x.matmul(fc.weight.t()) + fc.bias);
  say("The shape rule is [*, in] -> [*, out]: every dim but the last counts as a row. A [4, 5, 3]\n"
      "input is 20 rows (one GEMM of 20 x 3 by 3 x 2); a [3] input is one row.");
  SHOW(fc(tt::randn({4, 5, 3})).shape());
  SHOW(fc(tt::tensor({1.0, 2.0, 3.0})));
  say("The last dim must be in_features. The error names the op, the rule and both shapes:");
  SHOW_ERROR(fc(tt::zeros({4, 5})));
}

// -----------------------------------------------------------------------------------------------

void step_2_linear_backward() {
  tt::nn::Linear fc(3, 2);  // step 1's layer and input
  set_small_values(fc);
  tt::Tensor x = tt::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}});
  say("With the upstream gradient dY = dL/dY of shape [R, out], the chain rule gives\n"
      "    dX = dY W      [R, out] @ [out, in] -> [R, in]\n"
      "    dW = dY^T X    [out, R] @ [R, in]   -> [out, in]\n"
      "    db = dY summed over the R rows      -> [out]\n"
      "Make the loss sum(Y * G): then dL/dY is exactly G, and every gradient can be predicted.");
  RUN(x.requires_grad_());
  RUN(tt::Tensor G = tt::tensor({{1.0, 0.0}, {0.0, 2.0}}));
  RUN(tt::Tensor y = fc(x));
  SHOW(y.grad_fn()->name());
  say("One node for the product and the bias together (section 12 says why).");
  RUN((y * G).sum().backward());
  say("dX = G W: row 0 is 1 x W[0] = [1, -1, 2]; row 1 is 2 x W[1] = [0, 6, 2].");
  SHOW(x.grad());
  say("dW = G^T X: row 0 is 1 x X[0] = [1, 2, 3]; row 1 is 2 x X[1] = [-2, 0, 2].");
  SHOW(fc.weight.grad());
  say("db = the column sums of G = [1, 2]: the bias was added to every row, so it collects the\n"
      "gradient of every row.");
  SHOW(fc.bias.grad());
  say("And for random shapes, against finite differences in float64 (module 04's gradcheck),\n"
      "with a 3-D input so the leading dims are flattened into rows and back:");
  RUN(auto f64 = tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true));
  RUN(tt::manual_seed(0));
  RUN(tt::Tensor X = tt::randn({2, 3, 4}, f64), W = tt::randn({5, 4}, f64), b = tt::randn({5}, f64));
  SHOW(bool(tt::autograd::gradcheck([](const tt::autograd::TensorList& in) { return tt::F::linear(in[0], in[1], in[2]); },
                                    {X, W, b})));
}

// -----------------------------------------------------------------------------------------------

void step_3_model_tree() {
  say("An optimizer needs every tensor to train, dropout needs to know whether it is training,\n"
      "and a checkpoint needs a stable name for every tensor. nn::Module does all three once, for\n"
      "every layer. TinyMLP (top of this file) registers one buffer and three children:\n"
      "    input_mean = register_buffer(\"input_mean\", tt::zeros({4}));\n"
      "    fc1  = register_module(\"fc1\", std::make_shared<tt::nn::Linear>(4, 8));\n"
      "    drop = register_module(\"drop\", std::make_shared<tt::nn::Dropout>(0.5));\n"
      "    fc2  = register_module(\"fc2\", std::make_shared<tt::nn::Linear>(8, 3));\n"
      "and forward(x) = fc2(drop(relu(fc1(x - input_mean)))).");
  RUN(tt::manual_seed(1));
  RUN(TinyMLP model);
  SHOW(names(model.named_parameters().keys()));
  say("Dotted names: the path of child names down the tree, then the tensor's own name, in\n"
      "registration order. The walk does it, so no module lists its grandchildren by hand.");
  for (const auto& [name, p] : model.named_parameters())
    std::cout << "    " << name << std::string(12 - name.size(), ' ') << p.shape()
              << "  requires_grad=" << std::boolalpha << p.requires_grad() << "\n";
  SHOW(names(model.named_buffers().keys()));
  SHOW(names(model.named_modules().keys()));
  say("A registered tensor is a handle: the member and the dictionary entry are one tensor.");
  SHOW(model.named_parameters()["fc2.bias"].is_same(model.fc2->bias));
  say("Registration has rules. register_parameter makes the tensor require grad (it is the same\n"
      "handle, so the caller's w changes too); a parameter must be a leaf; names have no dots\n"
      "(dots are the path separator) and are unique.");
  RUN(tt::nn::Module m);
  RUN(tt::Tensor w = tt::randn({2, 2}));
  RUN(m.register_parameter("w", w));
  SHOW(w.requires_grad());
  SHOW_ERROR(m.register_parameter("twice_w", w * 2));
  SHOW_ERROR(m.register_parameter("layer.w", tt::zeros({2})));
  SHOW_ERROR(m.register_parameter("w", tt::zeros({2})));
}

// -----------------------------------------------------------------------------------------------

void step_4_counting_printing() {
  tt::manual_seed(1);
  TinyMLP model;  // step 3's
  say("fc1 has 4 x 8 + 8 = 40 numbers, fc2 has 8 x 3 + 3 = 27; buffers are not parameters.");
  SHOW(model.num_parameters());
  SHOW(model);
  say("The same for an MNIST-sized classifier. 203,530 parameters are 814 KB in float32; their\n"
      "gradients are as many again, and Adam (module 07) keeps two more copies.");
  RUN(tt::nn::Sequential mnist(tt::nn::Linear(784, 256), tt::nn::ReLU(), tt::nn::Dropout(0.1), tt::nn::Linear(256, 10)));
  SHOW(mnist);
}

// -----------------------------------------------------------------------------------------------

void step_5_default_init() {
  say("A new Linear draws weight and bias from U(-1/sqrt(in), 1/sqrt(in)). PyTorch states the\n"
      "weight's rule as kaiming_uniform_(w, a = sqrt(5)): the leaky_relu gain for slope sqrt(5) is\n"
      "sqrt(2 / (1 + 5)), and times sqrt(3 / in) that is exactly 1/sqrt(in).");
  RUN(tt::manual_seed(2));
  RUN(tt::nn::Linear wide(256, 128));
  SHOW(tt::nn::init::calculate_fan_in_and_fan_out(wide.weight).first);
  SHOW(tt::nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)) * std::sqrt(3.0 / 256));
  SHOW(1 / std::sqrt(256.0));
  SHOW(wide.weight.abs().max().item<double>());
  SHOW(wide.bias.abs().max().item<double>());
  say("A uniform U(-a, a) has variance a^2 / 3, so the std should be 1/sqrt(3 x 256) = 0.0361:");
  SHOW(wide.weight.std().item<double>());
}

// -----------------------------------------------------------------------------------------------

void step_6_deep_init() {
  say("Each output of a Linear sums `in` products w x. With weights of variance s^2 and zero-mean\n"
      "inputs, Var(y) = in * s^2 * E[x^2]: every layer multiplies the scale of the signal by\n"
      "sqrt(in) * s (times what the activation does to it). Below 1 it fades, above 1 it grows,\n"
      "and over 30 layers either compounds. The backward pass multiplies gradients the same way.\n"
      "\n"
      "Measured: 30 layers of Linear(128, 128) with zero biases, a batch of 256 inputs of std 1,\n"
      "and a random upstream gradient. Columns: std of the activations after layers 1 .. 30, then\n"
      "the std of the weight gradient of layer 1 (dW 1) and of layer 30 (dW 30).");
  {
    tt::nn::ModuleList stack;
    for (int i = 0; i < 30; ++i) stack.push_back(std::make_shared<tt::nn::Linear>(128, 128));
    auto rules = [](const std::string& act) {
      return std::vector<InitRule>{
          {"N(0, 0.01^2)", [](tt::Tensor& w) { tt::nn::init::normal_(w, 0.0, 0.01); }},
          {"N(0, 1)", [](tt::Tensor& w) { tt::nn::init::normal_(w, 0.0, 1.0); }},
          {"xavier_uniform_", [](tt::Tensor& w) { tt::nn::init::xavier_uniform_(w); }},
          {"kaiming_uniform_", [act](tt::Tensor& w) {
             tt::nn::init::kaiming_uniform_(w, 0.0, tt::nn::init::FanMode::FanIn, act);
           }},
          {"PyTorch default", [](tt::Tensor& w) { tt::nn::init::kaiming_uniform_(w, std::sqrt(5.0)); }},
      };
    };
    std::string header = std::string(22, ' ');
    for (const char* label : {"layer 1", "layer 2", "layer 5", "layer 10", "layer 20", "layer 30"}) header += fmt10(label);
    header += "  |" + fmt10("dW 1") + fmt10("dW 30") + "\n";
    std::cout << "\n  Tanh after every layer (kaiming with the tanh gain 5/3):\n" << header;
    for (const InitRule& rule : rules("tanh")) measure_stack(stack, [](const tt::Tensor& t) { return t.tanh(); }, rule);
    std::cout << "\n  ReLU after every layer (kaiming with the relu gain sqrt(2)):\n" << header;
    for (const InitRule& rule : rules("relu")) measure_stack(stack, [](const tt::Tensor& t) { return t.relu(); }, rule);
  }
  say("Reading the tables:\n"
      "  * N(0, 0.01^2): sqrt(128) x 0.01 = 0.11 per layer. The signal is gone by layer 10, and\n"
      "    with it every gradient: nothing can learn.\n"
      "  * N(0, 1): sqrt(128) = 11 per layer. Tanh saturates at once (std near 1: every unit is\n"
      "    +-1, carrying only a sign) and its gradients grow toward the input; ReLU explodes.\n"
      "  * xavier_uniform_: s^2 = 2 / (in + out) = 1/128, unit gain. Right for a linear layer; tanh\n"
      "    shrinks slowly, ReLU (which zeroes half the signal) loses sqrt(2) per layer.\n"
      "  * kaiming_uniform_: s^2 = gain^2 / in. With the ReLU gain sqrt(2) the ReLU stack holds\n"
      "    steady in both directions. The tanh gain 5/3 holds the tanh activations steady, but\n"
      "    its gradients grow toward the input, where Xavier's stay level while its activations\n"
      "    shrink: for tanh no single scale is exact in both directions, and both stay usable.\n"
      "  * PyTorch's default: s^2 = 1 / (3 in), a third of the variance a linear layer needs. Fine\n"
      "    for the shallow MLPs of this course, but a plain deep stack fades; deep models rely on\n"
      "    normalization (module 11) and residual connections (module 14), or pick their init.");
}

// -----------------------------------------------------------------------------------------------

void step_7_sequential() {
  say("Sequential calls its items in order and names them \"0\", \"1\", ... Any module with a\n"
      "forward(const Tensor&) can be an item: Sequential keeps the module and a call of its forward.");
  RUN(tt::manual_seed(3));
  RUN(tt::nn::Sequential seq(tt::nn::Linear(4, 8), tt::nn::ReLU(), tt::nn::Linear(8, 3)));
  SHOW(names(seq.named_parameters().keys()));
  RUN(tt::Tensor in = tt::randn({5, 4}));
  RUN(tt::Tensor by_hand = seq.ptr<tt::nn::Linear>(2)->forward(seq.ptr<tt::nn::Linear>(0)->forward(in).relu()));
  SHOW((seq(in) - by_hand).abs().max().item<float>());
  SHOW(seq[1]->name());
  SHOW_ERROR(seq.ptr<tt::nn::Linear>(1));
  SHOW_ERROR(seq[3]);
}

// -----------------------------------------------------------------------------------------------

void step_8_dropout() {
  say("While training, Dropout(p) zeroes each element with probability p and multiplies the\n"
      "survivors by 1 / (1 - p) (\"inverted\" dropout), so the expected output equals the input\n"
      "and evaluation needs no correction. With p = 0.5 the survivors become 2:");
  RUN(tt::nn::Dropout drop(0.5));
  RUN(tt::Tensor ones = tt::ones({2, 8}));
  RUN(tt::manual_seed(4));
  SHOW(drop(ones));
  say("The mask comes from the global generator: the same seed drops the same elements.");
  RUN(tt::manual_seed(4));
  SHOW(drop(ones));
  say("Over many elements, the fraction dropped is p and the mean stays 1:");
  RUN(tt::nn::Dropout drop25(0.25));
  RUN(tt::Tensor many = drop25(tt::ones({1000, 100})));
  SHOW((many == 0.0).to(tt::kFloat32).mean().item<float>());
  SHOW(many.mean().item<float>());
  say("The gradient goes through the same mask, with the same scale: a dropped element gets\n"
      "none, a kept one gets 1 / (1 - p).");
  RUN(tt::Tensor xd = tt::ones({2, 8}).requires_grad_());
  RUN(tt::manual_seed(4));
  RUN(drop(xd).sum().backward());
  SHOW(xd.grad());
  say("In eval mode Dropout is the identity: it returns its input, the very same tensor.");
  RUN(drop.eval());
  SHOW(drop(ones).is_same(ones));
}

// -----------------------------------------------------------------------------------------------

void step_9_train_eval() {
  tt::manual_seed(1);
  TinyMLP model;  // step 3's
  RUN(tt::manual_seed(5));
  RUN(tt::Tensor batch = tt::randn({2, 4}));
  SHOW(model.drop->is_training());
  say("Training mode: dropout draws a new mask on every call, so two calls differ.");
  SHOW(model.forward(batch));
  SHOW(model.forward(batch));
  RUN(model.eval());
  SHOW(model.drop->is_training());
  SHOW(model.forward(batch));
  SHOW(model.forward(batch));
  say("eval() changes what layers compute, not whether a graph is recorded: the output still\n"
      "requires grad. Inference also wants a NoGradGuard.");
  SHOW(model.forward(batch).requires_grad());
  RUN(model.train());
}

// -----------------------------------------------------------------------------------------------

void step_10_zero_grad() {
  tt::manual_seed(1);
  TinyMLP model;  // step 3's
  tt::manual_seed(5);
  const tt::Tensor batch = tt::randn({2, 4});  // step 9's
  say("Gradients add up across backward calls (module 04). For a loss that is the sum of the\n"
      "outputs over 2 rows, fc2.bias gets 2 per backward:");
  RUN(model.forward(batch).sum().backward());
  SHOW(model.fc2->bias.grad());
  RUN(model.forward(batch).sum().backward());
  SHOW(model.fc2->bias.grad());
  say("zero_grad() clears every parameter's gradient at once; by default it drops them (set to\n"
      "none), zero_grad(false) fills them with zeros instead.");
  RUN(model.zero_grad());
  SHOW(model.fc2->bias.grad().defined());
}

// -----------------------------------------------------------------------------------------------

void step_11_state_dict() {
  tt::manual_seed(1);
  TinyMLP model;  // step 3's
  tt::manual_seed(5);
  const tt::Tensor batch = tt::randn({2, 4});  // step 9's
  say("state_dict() lists every parameter and buffer under its dotted name: a module's own\n"
      "tensors first, then each child's. The entries are detached handles on the module's own\n"
      "storage, not copies.");
  RUN(tt::nn::StateDict sd = model.state_dict());
  for (const auto& [name, t] : sd) std::cout << "    " << name << std::string(12 - name.size(), ' ') << t.shape() << "\n";
  SHOW(sd["fc1.weight"].data_ptr<float>() == model.fc1->weight.data_ptr<float>());
  SHOW(sd["fc1.weight"].requires_grad());
  say("A second model, built from another seed, computes something else until it loads the\n"
      "first one's state:");
  RUN(tt::manual_seed(6));
  RUN(TinyMLP other);
  RUN(model.eval());
  RUN(other.eval());
  SHOW((model.forward(batch) - other.forward(batch)).abs().max().item<float>());
  RUN(other.load_state_dict(sd));
  SHOW((model.forward(batch) - other.forward(batch)).abs().max().item<float>());
  say("load_state_dict checks everything before it writes anything. A wrong shape, a missing or\n"
      "an unexpected key is an error, and the module is left exactly as it was:");
  RUN(tt::nn::StateDict wrong = model.state_dict());
  RUN(wrong.insert_or_assign("fc2.bias", tt::zeros({4})));
  SHOW_ERROR(other.load_state_dict(wrong));
  RUN(tt::nn::StateDict partial);
  RUN(for (const auto& [name, t] : sd) if (name != "fc2.bias") partial.insert(name, t));
  SHOW_ERROR(other.load_state_dict(partial));
  say("With strict = false, missing and unexpected keys are reported instead (shapes are still\n"
      "checked); fine-tuning a model with a new head does this.");
  RUN(tt::nn::LoadResult result = other.load_state_dict(partial, /*strict=*/false));
  SHOW(names(result.missing_keys));
  say("Module 08 writes a state dict to a file (safetensors) and reads it back.");
}

// -----------------------------------------------------------------------------------------------

void step_12_costs() {
  say("A Linear on R rows is one GEMM [R, in] @ [in, out]: 2 R in out FLOPs. The backward is two\n"
      "GEMMs of the same size (dX and dW), so twice that. It moves at least its operands and its\n"
      "result, 4 (R in + in out + R out) bytes in float32; FLOPs over bytes is its arithmetic\n"
      "intensity. Timed here, best of 5, R = 256 and in = out = 1024: 0.54 GFLOP forward.\n"
      "(Shared machines vary; compare ratios, not digits.)");
  {
    tt::manual_seed(7);
    const int64_t R = 256, n = 1024;
    tt::nn::Linear big(n, n);
    tt::Tensor xb = tt::randn({R, n});
    const double gflop = 2.0 * R * n * n / 1e9;
    // FLOPs per byte moved: the input, the weight and the output, each read or written once.
    auto intensity = [&](double rows) { return 2.0 * rows * n * n / (4.0 * (rows * n + double(n) * n + rows * n)); };
    double fwd = best_ms([&] {
      tt::NoGradGuard g;
      (void)big(xb);
    });
    double unfused = best_ms([&] {
      tt::NoGradGuard g;
      (void)(xb.matmul(big.weight.t()) + big.bias);
    });
    double both = best_ms([&] {
      big(xb).sum().backward();
      big.zero_grad();
    });
    double one_row = best_ms([&] {
      tt::NoGradGuard g;
      for (int i = 0; i < 10; ++i) (void)big(xb.select(0, 0));
    }) / 10;
    std::cout << "    forward, bias fused into the GEMM     " << fmt("%7.2f", fwd) << " ms  "
              << fmt("%6.1f", gflop / fwd * 1e3) << " GFLOP/s  " << fmt("%5.1f", intensity(double(R))) << " FLOP/byte\n"
              << "    forward as matmul, then + bias        " << fmt("%7.2f", unfused) << " ms\n"
              << "    forward + backward                    " << fmt("%7.2f", both) << " ms  " << fmt("%6.1f", 3 * gflop / both * 1e3) << " GFLOP/s (3x the forward's FLOPs)\n"
              << "    one row, R = 1 (a matrix-vector)      " << fmt("%7.3f", one_row) << " ms  "
              << fmt("%6.1f", 2.0 * n * n / 1e9 / one_row * 1e3) << " GFLOP/s  " << fmt("%5.1f", intensity(1.0))
              << " FLOP/byte\n"
              << "    (" << best_of(5) << ")\n";
  }
  say("One row does 2 in out = 2.1 MFLOP but still reads the whole 4 MB weight: half a FLOP per\n"
      "byte, so it runs at the speed of memory, not of arithmetic. With 256 rows the same weight\n"
      "is read once and used 256 times: 85 FLOPs per byte. That is why batching pays. The fused\n"
      "bias saves memory (no second [R, out] tensor) more than time: one pass over the output is\n"
      "small next to the GEMM, and the two forward timings differ by little more than the noise.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_05";
  w.begin = [] {
    std::cout << "Module 05 - layers: Linear by hand (forward and backward), modules and their dotted\n"
                 "parameter names, initialization measured 30 layers deep, Sequential, Dropout,\n"
                 "train/eval, state_dict, and what a Linear costs.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "A Linear layer, by hand", step_1_linear_by_hand},
      {"2", "Linear's backward: three formulas", step_2_linear_backward},
      {"3", "A model is a tree of modules", step_3_model_tree},
      {"4", "Counting parameters and printing a model", step_4_counting_printing},
      {"5", "PyTorch's default initialization", step_5_default_init},
      {"6", "Why initialization matters: 30 layers deep", step_6_deep_init},
      {"7", "Sequential: a chain of layers", step_7_sequential},
      {"8", "Dropout", step_8_dropout},
      {"9", "train() and eval() reach every module", step_9_train_eval},
      {"10", "zero_grad", step_10_zero_grad},
      {"11", "state_dict: the bridge to checkpoints", step_11_state_dict},
      {"12", "What a Linear costs", step_12_costs},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/06_losses, which turns these outputs into\n"
                 "a number to minimize.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


