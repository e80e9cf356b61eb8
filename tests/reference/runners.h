// The op runners of the reference suite, one per fixture family (each defined in its
// test_ref_<family>.cpp), declared together so that test_ref_large.cpp can reuse them.
#pragma once

#include "reference/reference_util.h"

namespace tt::reference::runners {

#define TT_REFERENCE_RUNNER(name) \
  std::vector<Tensor> name(const std::string& op, const json& args, std::vector<Input>& in)
TT_REFERENCE_RUNNER(binary);     // add sub mul div pow maximum minimum eq ne lt le gt ge
TT_REFERENCE_RUNNER(unary);      // neg exp log sqrt rsqrt abs sin cos tanh sigmoid relu
TT_REFERENCE_RUNNER(inplace);    // add_ sub_ mul_ div_ neg_ exp_ relu_
TT_REFERENCE_RUNNER(reduction);  // sum mean max min argmax argmin var std
TT_REFERENCE_RUNNER(view);       // view reshape flatten transpose t permute unsqueeze squeeze
                                 // expand slice select narrow contiguous clone
TT_REFERENCE_RUNNER(join);       // cat stack split chunk
TT_REFERENCE_RUNNER(indexing);   // index_select gather scatter_add(_) masked_fill(_) where
TT_REFERENCE_RUNNER(matmul);     // matmul mm bmm dot
TT_REFERENCE_RUNNER(convert);    // to copy_ fill_
TT_REFERENCE_RUNNER(factory);    // arange linspace eye full zeros ones
TT_REFERENCE_RUNNER(any);        // any op of the families above, by its name (test_ref_large.cpp)
#undef TT_REFERENCE_RUNNER

}  // namespace tt::reference::runners
