// Printing the autograd graph behind a tensor, so a learner can see what backward() will walk.
//
//   to_text(loss)   a plain-text tree for the terminal      to_dot(loss)   Graphviz text
//
// Both show backward nodes by name() (MulBackward0, ...), leaves by their shape and dtype, and
// follow next_edges, i.e. the direction gradients flow: from the output down to the leaves.
// Neither shows saved tensors or hooks. Both walk the graph with an explicit stack, so a graph of
// any depth prints without recursion.
#pragma once

#include <cstdint>
#include <string>

#include "tinytorch/core/tensor.h"

namespace tt::autograd {

// Graphviz text ("digraph { ... }"): render it with `dot -Tpng graph.dot -o graph.png`.
// The output tensor is a green box, backward nodes are grey boxes, leaves are blue boxes
// labelled with their shape. An edge into a node with several outputs is labelled with the
// output it feeds.
std::string to_dot(const Tensor& t);

// An indented tree, one node per line:
//
//   output [2, 3] float64
//   └─ MulBackward0
//      ├─ AddBackward0 (#1)
//      │  ├─ leaf [2, 3] float64
//      │  └─ leaf [3] float64
//      └─ AddBackward0 (#1, shown above)
//
// A subgraph reached along several paths is printed once, numbered, and referenced afterwards.
// At most `max_lines` lines are printed; a bigger graph ends with a line saying how many nodes
// were left out.
std::string to_text(const Tensor& t, int64_t max_lines = 1000);

}  // namespace tt::autograd
