// The graph printers of graph.h: one walk to find every node and how often it is reached, then a
// Graphviz or an indented-text rendering. Explicit stacks throughout (no recursion).
#include "tinytorch/autograd/graph.h"

#include <sstream>
#include <unordered_map>
#include <vector>

#include "tinytorch/autograd/node.h"

namespace tt::autograd {

namespace {

std::string describe(const Shape& shape, ScalarType dtype) {
  std::ostringstream os;
  os << shape << ' ' << dtype;
  return os.str();
}

const AccumulateGrad* as_leaf(const Node* n) { return dynamic_cast<const AccumulateGrad*>(n); }

std::string leaf_label(const AccumulateGrad* acc) {
  if (!acc->variable) return "leaf (freed)";
  return "leaf " + describe(acc->variable->shape, acc->variable->dtype);
}

// Every node reachable from `root`, in discovery order, and how many edges point at each
// (the root counts one, for the output tensor's own reference).
struct Reachable {
  std::vector<const Node*> order;
  std::unordered_map<const Node*, int> refs;
};

Reachable reach(const Node* root) {
  Reachable r;
  std::vector<const Node*> stack{root};
  r.refs[root] = 1;
  r.order.push_back(root);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.fn) continue;
      if (r.refs[e.fn.get()]++ == 0) {
        r.order.push_back(e.fn.get());
        stack.push_back(e.fn.get());
      }
    }
  }
  return r;
}

// The first line of both printers when there is no graph behind `t`.
std::string no_graph(const Tensor& t) {
  if (!t.defined()) return "undefined tensor (no graph)";
  if (t.requires_grad()) return "leaf " + describe(t.shape(), t.dtype()) + " (requires grad; nothing above it)";
  return "tensor " + describe(t.shape(), t.dtype()) + " (does not require grad: no graph)";
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string to_dot(const Tensor& t) {
  std::ostringstream os;
  os << "digraph tinytorch {\n"
     << "  node [shape=box, style=filled, fontname=\"monospace\", fillcolor=lightgrey];\n";
  if (!t.defined() || !t.grad_fn()) {
    os << "  output [label=\"" << dot_escape(no_graph(t)) << "\", fillcolor="
       << (t.defined() && t.requires_grad() ? "lightblue" : "white") << "];\n}\n";
    return os.str();
  }
  const Node* root = t.grad_fn().get();
  Reachable r = reach(root);
  std::unordered_map<const Node*, size_t> id;
  for (size_t i = 0; i < r.order.size(); ++i) id[r.order[i]] = i;

  os << "  output [label=\"output\\n" << dot_escape(describe(t.shape(), t.dtype()))
     << "\", fillcolor=darkolivegreen1];\n";
  for (const Node* n : r.order) {
    if (const AccumulateGrad* acc = as_leaf(n))
      os << "  n" << id[n] << " [label=\"" << dot_escape(leaf_label(acc)) << "\", fillcolor=lightblue];\n";
    else
      os << "  n" << id[n] << " [label=\"" << dot_escape(n->name()) << "\"];\n";
  }
  os << "  output -> n" << id[root];
  if (root->num_outputs > 1) os << " [label=\"" << t.unsafe_impl()->output_nr << "\"]";
  os << ";\n";
  for (const Node* n : r.order)
    for (const Edge& e : n->next_edges) {
      if (!e.fn) continue;
      os << "  n" << id[n] << " -> n" << id[e.fn.get()];
      if (e.fn->num_outputs > 1) os << " [label=\"" << e.input_nr << "\"]";
      os << ";\n";
    }
  os << "}\n";
  return os.str();
}

std::string to_text(const Tensor& t, int64_t max_lines) {
  if (!t.defined() || !t.grad_fn()) return no_graph(t) + "\n";
  const Node* root = t.grad_fn().get();
  Reachable r = reach(root);

  struct Item {
    const Node* node;
    uint32_t input_nr;     // which output of `node` this path reaches
    std::string lead;      // drawn before the label: "│  ├─ "
    std::string indent;    // drawn before the labels of its children: "│  │  "
  };
  std::ostringstream os;
  os << "output " << describe(t.shape(), t.dtype()) << "\n";
  std::vector<Item> stack{{root, t.unsafe_impl()->output_nr, "└─ ", "   "}};
  std::unordered_map<const Node*, int> number;  // shared nodes, numbered when first printed
  int64_t lines = 1;
  size_t printed = 0;
  while (!stack.empty()) {
    if (lines >= max_lines) {
      os << "... (" << r.order.size() - printed << " more nodes not shown)\n";
      break;
    }
    Item it = std::move(stack.back());
    stack.pop_back();
    const Node* n = it.node;
    os << it.lead;
    if (const AccumulateGrad* acc = as_leaf(n))
      os << leaf_label(acc);
    else
      os << n->name();
    if (n->num_outputs > 1) os << " (output " << it.input_nr << ")";
    ++lines;
    bool shared = r.refs[n] > 1;
    if (shared) {
      auto found = number.find(n);
      if (found != number.end()) {
        os << " (#" << found->second << ", shown above)\n";
        continue;
      }
      int k = int(number.size()) + 1;
      number[n] = k;
      os << " (#" << k << ")";
    }
    os << "\n";
    ++printed;
    // Children in order: push them reversed so the first is printed first.
    std::vector<const Edge*> kids;
    for (const Edge& e : n->next_edges)
      if (e.fn) kids.push_back(&e);
    for (size_t c = kids.size(); c-- > 0;) {
      bool last = c + 1 == kids.size();
      stack.push_back({kids[c]->fn.get(), kids[c]->input_nr, it.indent + (last ? "└─ " : "├─ "),
                       it.indent + (last ? "   " : "│  ")});
    }
  }
  return os.str();
}

}  // namespace tt::autograd
