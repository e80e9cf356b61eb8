// Module 04 walkthrough: reverse-mode autograd on a two-layer network small enough to check by
// hand. It builds the network, prints the graph behind the loss (as text and as Graphviz), runs
// backward and prints every gradient beside the value the chain rule gives, checks one gradient
// against a finite difference, then shows accumulation, broadcasting, the in-place error,
// retain_graph, double backward and gradcheck. Run it with `tools/tt walkthrough 04` (or
// build-*/modules/walkthrough_04). Each step prints its code (after ">>>") and the result. Each
// numbered section is one function; `--step N` reruns section N alone, `--list` lists them.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// "name: grad_fn name" or "name: leaf", for the tour of the graph.
std::string origin(const char* name, const tt::Tensor& t) {
  std::string s = std::string("    ") + name + ": ";
  if (t.grad_fn()) return s + t.grad_fn()->name();
  return s + (t.requires_grad() ? "leaf (requires grad)" : "leaf (data, no grad)");
}

// -----------------------------------------------------------------------------------------------

// Step 1's network, which the later steps read again: its parameters, data and forward values.
struct Network {
  tt::TensorOptions param;
  tt::Tensor x, W1, b1, w2, b2, t, z1, h, y, loss;
};

Network step_1_forward() {
  say("One input row x, a hidden layer of two ReLU units, one output, a squared-error loss.\n"
      "Parameters are leaves that require grad; x and the target t are data.");
  RUN(auto param = tt::TensorOptions().requires_grad(true));
  RUN(tt::Tensor x = tt::tensor({{1.0, 2.0}}));
  RUN(tt::Tensor W1 = tt::tensor({{0.5, -1.0}, {0.25, 0.2}}, param));
  RUN(tt::Tensor b1 = tt::tensor({0.1, 0.1}, param));
  RUN(tt::Tensor w2 = tt::tensor({2.0, -1.0}).view({2, 1}).requires_grad_());  // a [2, 1] column
  RUN(tt::Tensor b2 = tt::tensor({0.3}, param));
  RUN(tt::Tensor t = tt::tensor({1.5}).view({1, 1}));
  RUN(tt::Tensor z1 = x.matmul(W1) + b1);
  RUN(tt::Tensor h = z1.relu());
  RUN(tt::Tensor y = h.matmul(w2) + b2);
  RUN(tt::Tensor loss = (y - t).pow(2).mean());
  SHOW(z1);
  SHOW(h);
  SHOW(y);
  SHOW(loss);
  return {param, x, W1, b1, w2, b2, t, z1, h, y, loss};
}

// -----------------------------------------------------------------------------------------------

void step_2_graph() {
  const Network n = quietly(step_1_forward);
  const tt::Tensor x = n.x, W1 = n.W1, z1 = n.z1, h = n.h, y = n.y, loss = n.loss;
  say("Every op that saw an input requiring grad recorded a node; its output points at it\n"
      "through grad_fn. Leaves have no grad_fn.");
  std::cout << origin("x", x) << "\n" << origin("W1", W1) << "\n" << origin("z1", z1) << "\n"
            << origin("h", h) << "\n" << origin("y", y) << "\n" << origin("loss", loss) << "\n";
  SHOW(W1.is_leaf());
  SHOW(loss.is_leaf());
  say("Each node has one edge per input: the node that made that input, AccumulateGrad for a\n"
      "leaf that requires grad, or no edge, (none), for an input that needs no gradient (data, or\n"
      "a plain number such as the divisor of the mean). The loss's node and two below it:");
  {
    std::shared_ptr<tt::autograd::Node> n = loss.grad_fn();
    for (int depth = 0; n && depth < 3; ++depth) {
      std::cout << "    " << n->name() << " ->";
      std::shared_ptr<tt::autograd::Node> next;
      for (const tt::autograd::Edge& e : n->next_edges) {
        std::cout << " " << (e.fn ? e.fn->name() : std::string("(none)"));
        if (e.fn && !next) next = e.fn;
      }
      std::cout << "\n";
      n = next;
    }
  }
  say("The whole graph as a tree, from the loss down (to_text):");
  std::cout << tt::autograd::to_text(loss);
  say("The same graph in Graphviz's language (to_dot). Save it to graph.dot and run\n"
      "`dot -Tpng graph.dot -o graph.png` to draw it.");
  std::cout << tt::autograd::to_dot(loss);
}

// -----------------------------------------------------------------------------------------------

// Returns the network after its backward, which steps 4 and 5 read again.
Network step_3_backward() {
  const Network n = quietly(step_1_forward);
  tt::Tensor W1 = n.W1, b1 = n.b1, w2 = n.w2, b2 = n.b2, z1 = n.z1, h = n.h, y = n.y, loss = n.loss;
  say("Keep the intermediates' gradients too (only leaves keep theirs by default), then run\n"
      "backward from the loss.");
  RUN(z1.retain_grad());
  RUN(h.retain_grad());
  RUN(y.retain_grad());
  RUN(loss.backward());
  say("The chain rule, from the top. loss = mean((y - t)^2) with one element, so\n"
      "dloss/dy = 2 (y - t) = 2 (2.5 - 1.5) = 2:");
  SHOW(y.grad());
  say("y = h @ w2 + b2. b2 was added once: dloss/db2 = dloss/dy = 2.");
  SHOW(b2.grad());
  say("dloss/dw2 = h^T @ dloss/dy = [[1.1], [0]] * 2 = [[2.2], [0]]:");
  SHOW(w2.grad());
  say("dloss/dh = dloss/dy @ w2^T = 2 * [2, -1] = [[4, -2]]:");
  SHOW(h.grad());
  say("h = relu(z1) with z1 = [[1.1, -0.5]]: the gradient passes where z1 > 0 and stops where it\n"
      "is not. dloss/dz1 = [[4, -2]] * [[1, 0]] = [[4, 0]]:");
  SHOW(z1.grad());
  say("z1 = x @ W1 + b1. b1 ([2]) was broadcast over the batch dim of z1 ([1, 2]), so its\n"
      "gradient is dloss/dz1 summed over that dim: [4, 0].");
  SHOW(b1.grad());
  say("dloss/dW1 = x^T @ dloss/dz1 = [[1], [2]] @ [[4, 0]] = [[4, 0], [8, 0]]. The second column\n"
      "gets nothing: the ReLU unit it feeds was off for this input.");
  SHOW(W1.grad());
  return n;
}

// -----------------------------------------------------------------------------------------------

void step_4_finite_difference() {
  const Network n = quietly(step_3_backward);
  const tt::Tensor x = n.x, W1 = n.W1, b1 = n.b1, w2 = n.w2, b2 = n.b2, t = n.t;
  say("dloss/dW1[0][0] should be 4. Rebuild the loss as a plain function of W1 in float64, with\n"
      "grad mode off, and nudge that one entry by +-h:");
  {
    tt::NoGradGuard no_grad;
    auto loss_of = [&](const tt::Tensor& w) {
      tt::Tensor z = x.to(tt::kFloat64).matmul(w) + b1.to(tt::kFloat64);
      tt::Tensor out = z.relu().matmul(w2.to(tt::kFloat64)) + b2.to(tt::kFloat64);
      return (out - t.to(tt::kFloat64)).pow(2).mean().item<double>();
    };
    for (double step : {1e-2, 1e-4, 1e-6}) {
      tt::Tensor up = W1.detach().to(tt::kFloat64, /*copy=*/true);
      tt::Tensor down = up.clone();
      up.select(0, 0).select(0, 0).add_(step);
      down.select(0, 0).select(0, 0).sub_(step);
      double numeric = (loss_of(up) - loss_of(down)) / (2 * step);
      std::cout << "    h = " << fmt("%-6g", step) << "  (loss(W1 + h e00) - loss(W1 - h e00)) / 2h = "
                << fmt("%.12f", numeric) << "\n";
    }
    std::cout << "    autograd: " << fmt("%.12f", W1.grad().select(0, 0).select(0, 0).item<double>()) << "\n";
  }
  say("The loss is quadratic in W1[0][0] near this point, so even a large h is exact up to\n"
      "rounding. The difference in the 8th digit is not an error of either method: the float64\n"
      "rebuild uses the float32 values of b1 = 0.1 and b2 = 0.3, which are not exactly 0.1 and\n"
      "0.3, so its y - t is 1.0000000149 and its exact derivative 4 (y - t) = 4.0000000596; the float32\n"
      "backward rounds that to 4. Section 11 does this for every entry at once (gradcheck).");
}

// -----------------------------------------------------------------------------------------------

void step_5_accumulate() {
  const Network n = quietly(step_3_backward);  // b2.grad() is 2 after that backward
  tt::Tensor x = n.x, W1 = n.W1, b1 = n.b1, w2 = n.w2, b2 = n.b2, t = n.t;
  say("Backward ADDS into .grad. Run the same computation again (a new graph) without clearing:");
  RUN(auto forward = [&] { return ((x.matmul(W1) + b1).relu().matmul(w2) + b2 - t).pow(2).mean(); });
  RUN(forward().backward());
  SHOW(b2.grad());
  say("That is 2 + 2. Clear the gradients, the way an optimizer's zero_grad() does:");
  RUN(for (tt::Tensor p : {W1, b1, w2, b2}) p.set_grad(tt::Tensor()));
  SHOW(b2.grad().defined());
  RUN(forward().backward());
  SHOW(b2.grad());
  say("Or keep the tensor and zero it in place:");
  RUN(b2.grad().zero_());
  SHOW(b2.grad());
}

// -----------------------------------------------------------------------------------------------

void step_6_used_twice() {
  const tt::TensorOptions param = quietly(step_1_forward).param;
  say("b = 2a and c = 3a both use a; d = b * c = 6a^2, so dd/da = 12a. The engine counts two\n"
      "edges into a's AccumulateGrad and runs it once, with the sum 2*3a + 3*2a.");
  RUN(tt::Tensor a = tt::tensor({1.0}, param));
  RUN(tt::Tensor d = (2 * a) * (3 * a));
  RUN(d.backward());
  SHOW(a.grad());
  say("A chain of 100,000 ops: the engine keeps its own queue and stack, so depth is not limited\n"
      "by the C++ call stack.");
  {
    tt::Tensor c;
    const double ms = best_ms(
        [&] {
          c = tt::tensor({1.0}, param);
          tt::Tensor v = c;
          for (int i = 0; i < 100000; ++i) v = v * 1.0;
          v.backward();
        },
        3);
    std::cout << ">>> 100,000 times v = v * 1.0, then backward\n    c.grad() = " << c.grad().item<float>()
              << "   (" << fmt("%.0f", ms) << " ms for forward and backward, " << best_of(3) << ")\n";
  }
}

// -----------------------------------------------------------------------------------------------

void step_7_broadcasting() {
  const tt::TensorOptions param = quietly(step_1_forward).param;
  say("A [3] bias added to a [4, 3] batch is used 4 times per element; its gradient is the sum\n"
      "of the 4 rows of the upstream gradient, and always has the bias's own shape.");
  RUN(tt::Tensor batch = tt::arange(12, tt::kFloat32).view({4, 3}));
  RUN(tt::Tensor bias = tt::zeros({3}, param));
  RUN((batch + bias).sum().backward());
  SHOW(bias.grad());
  RUN(tt::Tensor col = tt::ones({4, 1}, param));
  RUN((batch * col).sum().backward());
  SHOW(col.grad());
  say("(col.grad()[i] is the sum of row i of the batch: 0+1+2, 3+4+5, ...)");
}

// -----------------------------------------------------------------------------------------------

void step_8_in_place() {
  const tt::TensorOptions param = quietly(step_1_forward).param;
  say("x * c saves c for the gradient of x (d(x*c)/dx = c). Writing into c afterwards would make\n"
      "that gradient silently wrong, so the saved copy remembers c's version and backward checks it.");
  RUN(tt::Tensor leaf = tt::ones({3}, param));
  RUN(tt::Tensor c = tt::tensor({1.0, 2.0, 3.0}));
  RUN(tt::Tensor prod = (leaf * c).sum());
  SHOW(c.version());
  RUN(c.add_(1));
  SHOW(c.version());
  SHOW_ERROR(prod.backward());
  say("Writing into a leaf that requires grad is refused at once:");
  SHOW_ERROR(leaf.add_(1));
  say("exp saves its output, so changing the output breaks exp's backward; sin saves its input,\n"
      "so changing sin's output is fine (and recorded in the graph like any other op).");
  RUN(tt::Tensor e = leaf.exp());
  RUN(e.add_(1));
  SHOW_ERROR(e.sum().backward());
  RUN(tt::Tensor sn = leaf.sin());
  RUN(sn.mul_(2));
  RUN(sn.sum().backward());
  SHOW(leaf.grad());
  say("(2 cos(1) = 1.0806: the in-place mul_ took part in the derivative.)");
}

// -----------------------------------------------------------------------------------------------

void step_9_retain_create_graph() {
  const tt::TensorOptions param = quietly(step_1_forward).param;
  say("After backward, nodes drop their saved tensors. A second backward through the same graph:");
  RUN(tt::Tensor u = tt::tensor({2.0}, param));
  RUN(tt::Tensor cube = u * u * u);
  RUN(cube.backward());
  SHOW_ERROR(cube.backward());
  say("With retain_graph = true the first time, both run (and the gradients add: 12 + 12):");
  RUN(u.set_grad(tt::Tensor()));
  RUN(tt::Tensor cube2 = u * u * u);
  RUN(cube2.backward(tt::Tensor(), /*retain_graph=*/true));
  RUN(cube2.backward());
  SHOW(u.grad());
  say("create_graph = true records the backward itself, so the gradient can be differentiated:\n"
      "for y = x^3 at x = 3, dy/dx = 3x^2 = 27 and d2y/dx2 = 6x = 18.");
  RUN(tt::Tensor x3 = tt::tensor({3.0}, tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true)));
  RUN(tt::Tensor y3 = x3.pow(3));
  RUN(tt::Tensor dy = tt::autograd::grad({y3}, {x3}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0]);
  SHOW(dy);
  SHOW(dy.grad_fn()->name());
  RUN(tt::Tensor d2y = tt::autograd::grad({dy}, {x3})[0]);
  SHOW(d2y);
  say("A Hessian-vector product without the Hessian: f(v) = sum(v^3), H = diag(6v), so H w = 6 v * w.");
  RUN(tt::Tensor vv = tt::tensor({1.0, 2.0, 3.0}, tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true)));
  RUN(tt::Tensor ww = tt::tensor({1.0, 0.0, -1.0}, tt::kFloat64));
  RUN(tt::Tensor gv = tt::autograd::grad({vv.pow(3).sum()}, {vv}, {}, true, true)[0]);
  SHOW(tt::autograd::grad({(gv * ww).sum()}, {vv})[0]);
}

// -----------------------------------------------------------------------------------------------

void step_10_no_graph() {
  const tt::Tensor W1 = quietly(step_1_forward).W1;
  {
    std::cout << ">>> { tt::NoGradGuard guard; tt::Tensor q = W1 * 2; ... }\n";
    tt::NoGradGuard guard;
    tt::Tensor q = W1 * 2;
    std::cout << "    q.requires_grad() = " << std::boolalpha << q.requires_grad()
              << ", q.grad_fn() is " << (q.grad_fn() ? "set" : "null") << "\n";
  }
  SHOW(W1.detach().requires_grad());
}

// -----------------------------------------------------------------------------------------------

void step_11_gradcheck() {
  say("gradcheck perturbs each input element by +-eps, computes the numerical Jacobian, and\n"
      "compares it with the one backward produces. Inputs must be float64.");
  RUN(auto opts64 = tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true));
  RUN(tt::manual_seed(0));
  RUN(tt::Tensor A = tt::randn({3, 4}, opts64));
  RUN(tt::Tensor B = tt::randn({4, 2}, opts64));
  SHOW(bool(tt::autograd::gradcheck([](const tt::autograd::TensorList& in) { return tt::softmax(in[0].matmul(in[1]), -1); },
                                    {A, B})));
  say("A broken backward is caught. Here a hook scales the gradient flowing into the softmax's\n"
      "input by 1.01: a 1% error, which training would never reveal. gradcheck calls fn with grad\n"
      "mode off for the finite differences, so the hook goes in only when there is a graph.");
  RUN(auto broken = [](const tt::autograd::TensorList& in) {
    tt::Tensor s = in[0].matmul(in[1]);
    if (s.requires_grad()) s.register_hook([](const tt::Tensor& g) { return g * 1.01; });
    return tt::softmax(s, -1);
  });
  RUN(tt::autograd::GradcheckResult result = tt::autograd::gradcheck(broken, {A, B}));
  SHOW(result.ok);
  SHOW(result.message);
  say("Why float64: the central difference of exp at x = 1 in float32 and float64. Its error is\n"
      "~eps^2 (truncation) plus ~machine_eps / eps (rounding).");
  for (double step : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
    float x32 = 1.0f, h32 = float(step);
    double d32 = double((std::exp(x32 + h32) - std::exp(x32 - h32)) / (2 * h32));
    double d64 = (std::exp(1.0 + step) - std::exp(1.0 - step)) / (2 * step);
    std::cout << "    eps " << fmt("%-6g", step) << "  float32 rel. error " << fmt("%9.2e", std::fabs(d32 / std::exp(1.0) - 1))
              << "   float64 rel. error " << fmt("%9.2e", std::fabs(d64 / std::exp(1.0) - 1)) << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_04";
  w.begin = [] {
    std::cout << "Module 04 - autograd: the graph, the engine, every gradient of a small network,\n"
                 "accumulation, broadcasting, in-place errors, double backward and gradcheck.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "A two-layer network, forward", step_1_forward},
      {"2", "The graph behind the loss", step_2_graph},
      {"3", "Backward, and every gradient by hand", step_3_backward},
      {"4", "One gradient against a finite difference", step_4_finite_difference},
      {"5", "Gradients accumulate", step_5_accumulate},
      {"6", "A value used twice: the engine waits for both contributions", step_6_used_twice},
      {"7", "Broadcasting reduces gradients", step_7_broadcasting},
      {"8", "In-place writes and the version counter", step_8_in_place},
      {"9", "retain_graph and create_graph", step_9_retain_create_graph},
      {"10", "No graph: NoGradGuard and detach", step_10_no_graph},
      {"11", "gradcheck: every backward against finite differences", step_11_gradcheck},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/05_layers, where parameters are\n"
                 "gathered into modules and this backward trains them.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


