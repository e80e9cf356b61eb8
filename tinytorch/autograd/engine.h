// The backward engine and the public autograd entry points.
#pragma once

#include <functional>
#include <vector>

#include "tinytorch/autograd/node.h"

namespace tt::autograd {

// Runs backward from `roots` (seeded with `grad_roots`; an undefined seed means ones for a
// one-element root) and accumulates into the .grad of every leaf that requires grad.
void backward(const TensorList& roots, const TensorList& grad_roots = {}, bool retain_graph = false,
              bool create_graph = false);

// Gradients of `outputs` w.r.t. `inputs`, returned rather than accumulated into .grad.
// An input that does not influence the outputs gets an undefined tensor when allow_unused,
// else an error.
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                bool retain_graph = false, bool create_graph = false, bool allow_unused = false);

// Queues fn to run on this thread once the backward pass now running has finished with its graph
// (every .grad written, every hook run), before backward() returns. Callbacks run in the order
// they were queued, including ones queued by a callback; an exception from one ends the backward
// with it. Call it from a hook during backward (as PyTorch's Variable._execution_engine.
// queue_callback): outside one it throws. A backward started inside a hook is a pass of its own:
// a callback queued while it runs runs when it ends, not when the outer one does.
// DistributedDataParallel queues one per backward to wait for its last all-reduces and write the
// averaged gradients back.
void queue_callback(std::function<void()> fn);

}  // namespace tt::autograd
