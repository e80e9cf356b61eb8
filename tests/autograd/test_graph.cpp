// The graph printers: to_text's exact layout (shared subgraphs shown once), to_dot's nodes and
// edges, tensors without a graph, multi-output nodes, and a 100,000-node chain. Custom ops
// (custom_ops.h) keep node names fixed; one test prints a graph of real ops.
#include <algorithm>
#include <memory>

#include "custom_ops.h"
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// A node with two outputs, as split or max(dim) have.
struct TwoOutputs final : autograd::Node {
  TwoOutputs() { num_outputs = 2; }
  std::string name() const override { return "TwoOutputsBackward"; }
  autograd::TensorList apply(autograd::TensorList&& grads) override { return {grads[0]}; }
};

}  // namespace

TEST_CASE("to_text draws a tree and shows a shared subgraph once", "[autograd][graph]") {
  Tensor x = leaf(zeros({2, 3}, kFloat64));
  Tensor y = leaf(ones({2, 3}, kFloat64));
  Tensor a = pair(x, y);
  Tensor z = pair(a, square(a));
  std::string expected =
      "output [2, 3] float64\n"
      "└─ PairBackward\n"
      "   ├─ PairBackward (#1)\n"
      "   │  ├─ leaf [2, 3] float64\n"
      "   │  └─ leaf [2, 3] float64\n"
      "   └─ SquareBackward\n"
      "      └─ PairBackward (#1, shown above)\n";
  CHECK(autograd::to_text(z) == expected);
}

TEST_CASE("to_text numbers a leaf used twice and skips inputs without grad", "[autograd][graph]") {
  Tensor x = leaf(zeros({4}, kFloat64));
  Tensor c = ones({4}, kFloat64);
  Tensor z = pair(pair(x, x), c);
  std::string expected =
      "output [4] float64\n"
      "└─ PairBackward\n"
      "   └─ PairBackward\n"
      "      ├─ leaf [4] float64 (#1)\n"
      "      └─ leaf [4] float64 (#1, shown above)\n";
  CHECK(autograd::to_text(z) == expected);
}

TEST_CASE("the graph printers handle tensors without a graph", "[autograd][graph]") {
  Tensor plain = zeros({2});
  CHECK(autograd::to_text(plain) == "tensor [2] float32 (does not require grad: no graph)\n");
  Tensor x = leaf(zeros({2, 2}, kFloat64));
  CHECK(autograd::to_text(x) == "leaf [2, 2] float64 (requires grad; nothing above it)\n");
  CHECK(autograd::to_text(Tensor()) == "undefined tensor (no graph)\n");
  std::string dot = autograd::to_dot(x);
  CHECK_THAT(dot, StartsWith("digraph"));
  CHECK_THAT(dot, Contains("leaf [2, 2] float64"));
  CHECK(count(dot, "->") == 0);
}

TEST_CASE("to_dot lists every node once and every edge along next_edges", "[autograd][graph]") {
  Tensor x = leaf(zeros({2, 3}, kFloat64));
  Tensor y = leaf(ones({2, 3}, kFloat64));
  Tensor a = pair(x, y);
  Tensor z = pair(a, square(a));
  std::string dot = autograd::to_dot(z);
  CHECK_THAT(dot, StartsWith("digraph tinytorch {"));
  CHECK_THAT(dot, EndsWith("}\n"));
  CHECK(count(dot, "label=\"PairBackward\"") == 2);
  CHECK(count(dot, "label=\"SquareBackward\"") == 1);
  CHECK(count(dot, "label=\"leaf [2, 3] float64\"") == 2);
  CHECK(count(dot, "label=\"output\\n[2, 3] float64\"") == 1);
  // output -> root, root -> {a, square}, a -> {x, y}, square -> a
  CHECK(count(dot, "->") == 6);
  CHECK(count(dot, "output -> n0;") == 1);
}

TEST_CASE("the graph printers label the output of a multi-output node", "[autograd][graph]") {
  Tensor x = leaf(zeros({3}, kFloat64));
  Tensor o0, o1;
  {
    NoGradGuard g;
    o0 = x * 1.0;
    o1 = x * 1.0;
  }
  auto node = std::make_shared<TwoOutputs>();
  node->next_edges.push_back(autograd::gradient_edge(x));
  autograd::set_history(o0, node, 0);
  autograd::set_history(o1, node, 1);
  Tensor z = pair(o0, o1);
  std::string text = autograd::to_text(z);
  CHECK_THAT(text, Contains("├─ TwoOutputsBackward (output 0) (#1)\n"));
  CHECK_THAT(text, Contains("└─ TwoOutputsBackward (output 1) (#1, shown above)\n"));
  std::string dot = autograd::to_dot(z);
  CHECK(count(dot, "[label=\"0\"]") == 1);
  CHECK(count(dot, "[label=\"1\"]") == 1);
  CHECK_THAT(autograd::to_text(o1), Contains("└─ TwoOutputsBackward (output 1)\n"));
}

TEST_CASE("the graph printers walk a 100,000-node chain without recursion", "[autograd][graph]") {
  Tensor x = leaf(zeros({1}, kFloat64));
  Tensor c = zeros({1}, kFloat64);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = pair(y, c);
  std::string text = autograd::to_text(y, 20);
  CHECK(count(text, "\n") == 21);
  CHECK_THAT(text, EndsWith("... (99982 more nodes not shown)\n"));
  std::string dot = autograd::to_dot(y);
  CHECK(count(dot, "->") == 100001);
}

TEST_CASE("to_text shows the graph of real ops", "[autograd][graph]") {
  Tensor x = leaf(randn({4, 3}, kFloat64));
  Tensor w = leaf(randn({3, 2}, kFloat64));
  Tensor b = leaf(randn({2}, kFloat64));
  Tensor loss = (x.matmul(w) + b).relu().sum();
  std::string text = autograd::to_text(loss);
  INFO(text);
  CHECK_THAT(text, StartsWith("output [] float64\n└─ "));
  CHECK_THAT(text, Contains("leaf [4, 3] float64"));
  CHECK_THAT(text, Contains("leaf [3, 2] float64"));
  CHECK_THAT(text, Contains("leaf [2] float64"));
  CHECK(count(text, "Backward") >= 4);  // sum, relu, add, matmul
  std::string dot = autograd::to_dot(loss);
  CHECK(count(dot, "fillcolor=lightblue") == 3);
}
