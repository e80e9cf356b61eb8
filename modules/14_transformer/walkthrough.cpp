// Module 14 walkthrough: the transformer, and a tiny GPT that learns. A block taken apart shape by
// shape and its parameters counted; pre-norm against post-norm (the stream and its gradient at
// each depth of 24 blocks, then one 4-block GPT trained both ways); the GELU MLP; the GPT built
// around the blocks, its module tree, its tied head (one tensor under two names) and its
// causality, checked; FLOPs per token and tokens per second, measured; the milestone: a GPT
// trained to reverse 8 digits to 100% exact-sequence accuracy on rows it never saw, with its loss
// curve and the attention heads that learned to look at the mirrored position; generation,
// greedy, with temperature and top-k; the KV cache: the same tokens, its bytes, its speedup; and
// positions inside attention: learned, sinusoidal and rotary (with and without QK-norm), their
// properties checked, then the milestone's GPT trained each way and compared. The trained
// model's attention maps are saved as PNG (walkthrough_14_figures beside the executable, or DIR).
// Run it with `tools/tt walkthrough 14` (or build-*/modules/walkthrough_14). Each step prints its
// code (after ">>>") and the result. Each numbered section is one function; `--step N` reruns
// section N alone, `--list` lists them (8 and 9 train the milestone's GPT first).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, best_ms, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

using tt::Tensor;
namespace nn = tt::nn;
namespace data = tt::data;

std::string g_out_dir;  // where the PNG figures go (set by main)

std::string figure(const std::string& name) { return (std::filesystem::path(g_out_dir) / name).string(); }

// "best of 10, 2 threads": what a timing measured.
std::string timing_note(int reps) {
  return "best of " + std::to_string(reps) + ", " + std::to_string(tt::get_num_threads()) + " thread" +
         (tt::get_num_threads() == 1 ? "" : "s");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double max_abs(const Tensor& t) { return t.detach().abs().max().item<double>(); }
double std_of(const Tensor& t) { return t.detach().to(tt::kFloat64).std().item<double>(); }
double norm_of(const Tensor& t) { return std::sqrt(t.detach().to(tt::kFloat64).pow(2).sum().item<double>()); }

// A shape as "[2, 16, 64]".
std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// The blocks of a GPT, as TransformerBlocks.
std::vector<std::shared_ptr<nn::TransformerBlock>> blocks_of(const nn::GPT& gpt) {
  std::vector<std::shared_ptr<nn::TransformerBlock>> out;
  for (size_t i = 0; i < gpt.blocks->size(); ++i) out.push_back(gpt.blocks->ptr<nn::TransformerBlock>(int64_t(i)));
  return out;
}

// One line of the anatomy: a name, what it computes, and the shape that comes out.
void step_line(const std::string& name, const std::string& what, const Tensor& t) {
  std::cout << "    " << name << std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') << what
            << std::string(what.size() < 44 ? 44 - what.size() : 1, ' ') << shape_str(t) << "\n";
}

// The same block rearranged as the original transformer (post-norm): the LayerNorm comes after
// each residual add, so the stream itself is normalized. x: [B, T, E] -> [B, T, E].
Tensor post_norm_forward(const nn::TransformerBlock& block, const Tensor& x) {
  nn::MultiHeadAttentionForward args;
  args.is_causal = true;
  args.need_weights = false;
  Tensor a = block.attn->forward(x, x, x, args).first;
  Tensor y = block.ln1->forward(x + a);
  Tensor m = block.fc2->forward(tt::gelu(block.fc1->forward(y)));
  return block.ln2->forward(y + m);
}

// Per-depth measurements of one forward and backward through a stack of blocks.
struct DepthProfile {
  std::vector<double> stream_std;  // std of the residual stream entering each block
  std::vector<double> grad_norm;   // norm of d loss / d (that stream)
};

// Runs x through `blocks` (pre-norm as the library's, or post-norm as above), then a final
// LayerNorm and a fixed random readout, and measures the stream and its gradient at each depth.
DepthProfile profile_depth(const std::vector<std::shared_ptr<nn::TransformerBlock>>& blocks, nn::LayerNorm& final_norm,
                           const Tensor& x, const Tensor& readout, bool post_norm) {
  std::vector<Tensor> inputs;
  Tensor h = x.detach().clone().requires_grad_(true);  // a leaf of its own: its .grad is filled
  for (const auto& block : blocks) {
    if (!h.is_leaf()) h.retain_grad();
    inputs.push_back(h);
    h = post_norm ? post_norm_forward(*block, h) : block->forward(h);
  }
  Tensor loss = (final_norm.forward(h) * readout).sum();
  loss.backward();
  DepthProfile p;
  for (const Tensor& in : inputs) {
    p.stream_std.push_back(std_of(in));
    p.grad_norm.push_back(norm_of(in.grad()));
  }
  return p;
}

// The milestone's GPT (section 7) with n_layer blocks, run pre-norm (its own forward) or
// post-norm (the same weights through post_norm_forward, with the embeddings normalized first,
// as BERT does), trained on the reverse task with AdamW at a constant lr. Returns the held-out
// exact-sequence accuracy every 25 steps.
std::vector<double> train_norm_variant(int64_t n_layer, double lr, bool post_norm, int64_t steps) {
  tt::manual_seed(0);
  data::SequenceTask task = data::make_sequence_task(data::SequenceTaskKind::kReverse, 8, 0);
  const int64_t V = task.vocab_size();
  nn::GPT gpt(nn::GPTOptions(V, task.sequence_length()).n_layer(n_layer).n_embd(64).n_head(4));
  auto forward = [&](const Tensor& ids) {
    if (!post_norm) return gpt(ids);
    Tensor positions = tt::arange(0, ids.size(1), 1, tt::TensorOptions().dtype(tt::kInt64));
    Tensor h = tt::layer_norm(gpt.tok_emb->forward(ids) + gpt.pos_emb->forward(positions), {gpt.options.n_embd()});
    for (const auto& block : blocks_of(gpt)) h = post_norm_forward(*block, h);
    return gpt.head->forward(gpt.ln_f->forward(h));
  };
  tt::optim::AdamW opt(gpt.parameters(), tt::optim::AdamWOptions(lr).weight_decay(0.0));
  data::SequenceBatch test = task.held_out(500);
  std::vector<double> acc;
  for (int64_t step = 1; step <= steps; ++step) {
    data::SequenceBatch b = task.sample(64);
    Tensor loss = tt::F::cross_entropy(forward(b.input).reshape({-1, V}), b.target.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step % 25 == 0) {
      tt::NoGradGuard no_grad;
      acc.push_back(data::sequence_accuracy(forward(test.input), test.target).sequence);
    }
  }
  return acc;
}

// One matrix product [M, K] @ [K, N] in float32: its FLOPs, and the fewest bytes it can move
// (each operand read once, the result written once). Their ratio is its arithmetic intensity.
struct MatmulCost {
  double flops, bytes;
};
MatmulCost matmul_cost(int64_t M, int64_t K, int64_t N) {
  return {2.0 * double(M) * double(K) * double(N), 4.0 * double(K * N + M * K + M * N)};
}

// Softmax of logits / temperature over a vector: the sampling distribution generate() draws from.
std::vector<double> softmax_at(const std::vector<double>& logits, double temperature) {
  double top = *std::max_element(logits.begin(), logits.end()), total = 0;
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp((logits[i] - top) / temperature);
  for (double& v : p) v /= total;
  return p;
}

// The fraction of rows of `generated` [B, prompt + L] whose last L tokens equal answer [B, L].
double exact_fraction(const Tensor& generated, const Tensor& answer) {
  int64_t L = answer.size(1);
  Tensor got = generated.slice(1, generated.size(1) - L, generated.size(1));
  return ((got == answer).to(tt::kInt64).sum({1}) == L).to(tt::kFloat64).mean().item<double>();
}

// -----------------------------------------------------------------------------------------------

void step_1_block() {
  say("A block is two residual branches around a stream x of shape [B, T, E]: attention, which\n"
      "mixes information between positions, then an MLP, which transforms each position on its\n"
      "own. Each branch reads a LayerNorm of the stream and adds its result back (pre-norm):\n"
      "    x = x + attn(ln1(x))\n"
      "    x = x + fc2(gelu(fc1(ln2(x))))\n"
      "One block with E = 64 and 4 heads (head dim D = 16), as the module tree prints it:");
  RUN(tt::manual_seed(0));
  RUN(nn::TransformerBlock block(64, 4));
  std::cout << block << "\n";
  say("Its forward, done by hand with the block's own layers, on B = 2 sequences of T = 16\n"
      "positions. The shape after each step:");
  RUN(Tensor x = tt::randn({2, 16, 64}));
  Tensor by_hand;
  {
    std::cout << ">>> (the steps of block.forward(x), each printed with the shape it makes)\n";
    step_line("x", "the residual stream", x);
    Tensor h = block.ln1->forward(x);
    step_line("ln1", "LayerNorm over E, per position", h);
    Tensor q = block.attn->q_proj->forward(h), k = block.attn->k_proj->forward(h), v = block.attn->v_proj->forward(h);
    step_line("q, k, v", "three Linear(64, 64) projections", q);
    auto heads = [](const Tensor& t) { return t.view({2, 16, 4, 16}).transpose(1, 2); };
    Tensor qh = heads(q), kh = heads(k), vh = heads(v);
    step_line("heads", "view [B, T, H, D], transpose to [B, H, T, D]", qh);
    Tensor w = tt::attention_weights(qh, kh, {}, /*is_causal=*/true);
    step_line("weights", "softmax(q k^T / sqrt(D)), causal", w);
    Tensor o = w.matmul(vh);
    step_line("w @ v", "each position's mix of the values", o);
    Tensor merged = o.transpose(1, 2).reshape({2, 16, 64});
    step_line("merge", "transpose back, heads side by side", merged);
    Tensor a = block.attn->out_proj->forward(merged);
    step_line("out_proj", "Linear(64, 64)", a);
    Tensor y = x + a;
    step_line("x + a", "first residual add", y);
    Tensor f = block.fc1->forward(block.ln2->forward(y));
    step_line("fc1", "ln2, then Linear(64, 256): 4x wider", f);
    Tensor g = tt::gelu(f);
    step_line("gelu", "elementwise", g);
    Tensor m = block.fc2->forward(g);
    step_line("fc2", "Linear(256, 64): back to E", m);
    by_hand = y + m;
    step_line("y + m", "second residual add: the block's output", by_hand);
  }
  SHOW(max_abs(block(x) - by_hand));
  say("(The block itself runs attention through the fused kernel, which never builds the\n"
      "[B, H, T, T] weights; the sums come out in another order, hence the last-bit difference.)\n"
      "Shape in, same shape out: blocks stack. Where the parameters are, with E = 64:");
  {
    std::cout << ">>> for (auto& [name, p] : block.named_parameters()) ...\n";
    for (const auto& [name, p] : block.named_parameters())
      std::cout << "    " << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ')
                << shape_str(p) << "  " << p.numel() << "\n";
  }
  SHOW(block.num_parameters());
  say("attention: 4 E^2 + 4 E = 16,640; MLP: 8 E^2 + 5 E = 33,088; two LayerNorms: 4 E = 256.\n"
      "In all 12 E^2 + 13 E = 49,984: the MLP holds two thirds, and the E^2 terms are everything\n"
      "once E is in the hundreds.");
}

// -----------------------------------------------------------------------------------------------

void step_2_pre_post_norm() {
  say("The original transformer (2017) put each LayerNorm after the residual add:\n"
      "    x = ln1(x + attn(x));   x = ln2(x + mlp(x))              post-norm\n"
      "GPT-2 and nearly every model since put it at the entrance of each branch (section 1),\n"
      "which leaves the stream itself alone: a clean path of additions from the embeddings to\n"
      "the output, along which the gradient flows back through an identity at every block.\n"
      "First, 24 blocks as constructed, run both ways on the same input. At each depth, the std\n"
      "of the stream entering the block and the norm of the loss's gradient with respect to it\n"
      "(loss: a fixed random readout of a final LayerNorm):");
  {
    tt::manual_seed(1);
    std::vector<std::shared_ptr<nn::TransformerBlock>> stack;
    for (int i = 0; i < 24; ++i) stack.push_back(std::make_shared<nn::TransformerBlock>(64, 4));
    nn::LayerNorm final_norm(nn::LayerNormOptions({64}));
    Tensor x0 = tt::randn({4, 16, 64});
    Tensor readout = tt::randn({4, 16, 64});
    DepthProfile pre = profile_depth(stack, final_norm, x0, readout, false);
    DepthProfile post = profile_depth(stack, final_norm, x0, readout, true);
    std::cout << ">>> profile_depth(stack, final_norm, x0, readout, post_norm)   (in this file)\n"
              << "    depth   pre-norm: stream std   grad norm   post-norm: stream std   grad norm\n";
    for (size_t d : {0, 1, 2, 4, 8, 12, 16, 20, 23})
      std::cout << "    " << fmt("%5.0f", double(d)) << fmt("%23.3f", pre.stream_std[d])
                << fmt("%12.2f", pre.grad_norm[d]) << fmt("%24.3f", post.stream_std[d])
                << fmt("%12.2f", post.grad_norm[d]) << "\n";
  }
  say("Pre-norm: each block adds its branches to the stream, so its scale grows with depth (the\n"
      "GPT's final LayerNorm, ln_f, takes care of it), and the gradient reaches the first block\n"
      "undiminished, larger if anything. Post-norm pins the stream at std 1. At initialization\n"
      "neither gradient vanishes: the difference is not in these numbers. It shows in training.\n"
      "The milestone's GPT (section 7) with 4 blocks, built both ways from the same weights (the\n"
      "post-norm one also normalizes its embeddings, as BERT does), trained on the milestone's\n"
      "task with AdamW and no warmup. Held-out exact-sequence accuracy every 25 steps:");
  {
    struct Run {
      double lr;
      bool post_norm;
      std::vector<double> acc;
    };
    std::vector<Run> runs = {{1e-3, false, {}}, {1e-3, true, {}}, {3e-3, false, {}}, {3e-3, true, {}}};
    for (Run& r : runs) r.acc = train_norm_variant(4, r.lr, r.post_norm, 150);
    std::cout << ">>> train_norm_variant(n_layer = 4, lr, post_norm, 150 steps)   (in this file)\n"
              << "     step   lr 1e-3: pre-norm   post-norm      lr 3e-3: pre-norm   post-norm\n";
    for (size_t i = 0; i < runs[0].acc.size(); ++i)
      std::cout << "    " << fmt("%5.0f", 25.0 * double(i + 1)) << fmt("%19.1f%%", 100 * runs[0].acc[i])
                << fmt("%11.1f%%", 100 * runs[1].acc[i]) << fmt("%22.1f%%", 100 * runs[2].acc[i])
                << fmt("%11.1f%%", 100 * runs[3].acc[i]) << "\n";
  }
  say("Pre-norm learns the task at either learning rate. Post-norm starts late at 1e-3 and, at\n"
      "3e-3, never leaves the loss of a uniform guess over the ten digits (ln 10 = 2.30) in the\n"
      "150 steps: the same weights, the same data, only the place of the LayerNorms differs. In\n"
      "post-norm every path from the loss to a lower block passes through the LayerNorms of all\n"
      "the blocks above it, and the model is sensitive to every update; the original transformer\n"
      "needed a learning-rate warmup and small rates to train at all (Xiong et al. 2020 analyse\n"
      "why). Pre-norm trains at depth with little fuss, which is why GPT-2 and its successors use\n"
      "it. Module 11 measured the same effect with plain layers.");
}

// -----------------------------------------------------------------------------------------------

void step_3_mlp_gelu() {
  tt::manual_seed(0);  // step 1's block, the first draw after its seed
  nn::TransformerBlock block(64, 4);
  say("The MLP widens each position to 4 E, applies GELU, and projects back. GELU(x) = x * Phi(x),\n"
      "Phi the normal CDF: close to ReLU for |x| large, but smooth, and slightly negative for\n"
      "small negative x (its minimum is about -0.17, near x = -0.75).");
  RUN(Tensor z = tt::tensor({-3.0f, -1.0f, -0.75f, -0.25f, 0.0f, 0.25f, 1.0f, 3.0f}));
  SHOW(tt::gelu(z));
  SHOW(tt::relu(z));
  SHOW(max_abs(tt::gelu(z, "tanh") - tt::gelu(z)));
  say("(the tanh approximation, GPT-2's, differs in the fourth decimal). The MLP never mixes\n"
      "positions: change the stream at position 5 and only position 5 of the MLP's output moves.\n"
      "Attention is the only place where positions meet.");
  {
    // The random stream where step 2 leaves it (its last training run seeds 0 and builds a 4-block
    // GPT, 548,096 numbers), so that the numbers below are the same when this step runs alone.
    resume_random_stream(0, 548096);
    tt::NoGradGuard no_grad;
    auto mlp = [&](const Tensor& t) { return block.fc2->forward(tt::gelu(block.fc1->forward(t))); };
    Tensor s = tt::randn({1, 8, 64});
    Tensor s2 = s.clone();
    s2.select(1, 5).add_(tt::randn({64}));
    Tensor moved = std::get<0>((mlp(s2) - mlp(s)).abs().max(-1, false));  // [1, 8]
    std::cout << ">>> (mlp(s2) - mlp(s)).abs() max per position, s2 = s changed at position 5\n    ";
    std::vector<float> mv = moved.select(0, 0).to_vector<float>();
    for (float v : mv) std::cout << fmt("%.3g", v) << " ";
    std::cout << "\n";
  }
}

// -----------------------------------------------------------------------------------------------

// Step 4's GPT, built again for the steps that read it: the first draw after seed 0.
std::unique_ptr<nn::GPT> step_4_gpt_again() {
  tt::manual_seed(0);
  return std::make_unique<nn::GPT>(nn::GPTOptions(11, 16).n_layer(2).n_embd(64).n_head(4));
}

void step_4_gpt() {
  say("A GPT turns token ids [B, T] into next-token logits [B, T, V]:\n"
      "    h = tok_emb(ids) + pos_emb(0 .. T-1)     [B, T, E]   token and learned position vectors\n"
      "    h = blocks(h)                             [B, T, E]   n_layer blocks, causal attention\n"
      "    logits = head(ln_f(h))                    [B, T, V]   a final LayerNorm, then Linear(E, V)\n"
      "The one of the milestone: a vocabulary of 11 tokens (digits and '>'), 16 positions, 2\n"
      "blocks of E = 64 with 4 heads.");
  RUN(tt::manual_seed(0));
  RUN(nn::GPT gpt(nn::GPTOptions(11, 16).n_layer(2).n_embd(64).n_head(4)));  // vocab_size, context_length
  std::cout << gpt << "\n";
  SHOW(gpt.num_parameters());
  say("= tok_emb 11 x 64 + pos_emb 16 x 64 + 2 blocks x 49,984 + ln_f 128 = 101,824. The head has\n"
      "no parameters of its own: its weight IS the token embedding (weight tying). The logit of\n"
      "token v is the dot product of the final vector with v's own embedding, so tokens used alike\n"
      "get alike vectors at both ends. One tensor under two names:");
  SHOW(gpt.head->weight.is_same(gpt.tok_emb->weight));
  SHOW(gpt.head->weight.shape());
  SHOW(gpt.named_parameters().contains("head.weight"));
  SHOW(gpt.state_dict().contains("head.weight"));
  RUN(nn::GPT untied(nn::GPTOptions(11, 16).n_layer(2).n_embd(64).n_head(4).tie_weights(false)));
  SHOW(untied.num_parameters() - gpt.num_parameters());
  say("parameters() lists the shared tensor once (as tok_emb.weight), so the optimizer steps it\n"
      "once, with the sum of both gradients: the backward of the lookup and of the head both add\n"
      "into the same .grad. state_dict() saves both names, as PyTorch does. Here tying saves 704\n"
      "parameters; with GPT-2's 50,257 tokens and E = 768 it saves 38.6 million, 31% of the\n"
      "small GPT-2.");
}

// -----------------------------------------------------------------------------------------------

void step_5_causality() {
  const std::unique_ptr<nn::GPT> gpt_again = step_4_gpt_again();
  nn::GPT& gpt = *gpt_again;
  say("A language model trains on every position at once: position t predicts token t + 1 from\n"
      "tokens 0 .. t. That is only honest if position t cannot see later tokens. Change the token\n"
      "at position 10 and compare the logits at every position:");
  {
    RUN(Tensor ids = tt::tensor({{3, 1, 4, 1, 5, 9, 2, 6, 10, 6, 2, 9, 5, 1, 4, 1}}));
    RUN(Tensor changed = ids.clone());
    RUN(changed.select(1, 10).fill_(7));
    Tensor a, b;
    {
      tt::NoGradGuard no_grad;
      a = gpt(ids);
      b = gpt(changed);
    }
    std::cout << ">>> max |logits(changed) - logits(ids)| at each position\n    ";
    for (int64_t t = 0; t < 16; ++t) std::cout << fmt("%.2g", max_abs(b.select(1, t) - a.select(1, t))) << " ";
    std::cout << "\n";
  }
  say("Exactly 0 before position 10: not small, zero, because the masked scores never enter any\n"
      "sum. From position 10 on, every position sees the change. The suite checks the same for\n"
      "every position of a random sequence.");
}

// -----------------------------------------------------------------------------------------------

void step_6_costs() {
  say("Each weight of a Linear is used once per token in one multiply-add: 2 FLOPs forward, and\n"
      "twice that backward (the gradient for the input and for the weight). So training costs\n"
      "about 6 N FLOPs per token, N the number of weights in matrix products. Attention adds\n"
      "the scores and the weighted sum: 4 E FLOPs per earlier position per layer, forward, next\n"
      "to 24 E^2 for the block's matrix products, so it is small while the context is well below\n"
      "6 E. The head is a matrix product too (E V weights, tied or not).");
  {
    const int64_t E = 64, L = 2, V = 11, T = 16, B = 64;
    int64_t n_matmul = L * 12 * E * E + E * V;
    double attn_fwd = double(L) * 4 * E * (T + 1) / 2.0;  // causal: on average (T + 1) / 2 keys
    double train_per_token = 6.0 * n_matmul + 3 * attn_fwd;
    std::cout << ">>> weights in matrix products: N = 2 x 12 x 64^2 + 64 x 11 = " << n_matmul << "\n"
              << "    training FLOPs per token: 6 N + 3 x attention = " << fmt("%.0f", 6.0 * n_matmul) << " + "
              << fmt("%.0f", 3 * attn_fwd) << " = " << fmt("%.0f", train_per_token) << "\n";
    say("FLOPs are half the story: each number must also come from memory. A product [M, K] @ [K, N]\n"
        "does 2 M K N FLOPs and, at the least, moves its three matrices once: 4 (K N + M K + M N)\n"
        "bytes in float32. FLOPs per byte, its arithmetic intensity, says which limit it meets: a\n"
        "core does tens of FLOPs in the time it loads one byte from memory, so a product far below\n"
        "that waits for memory whatever its FLOP count. The forward's products, for the 1,024 tokens\n"
        "of a training batch (M = 1,024) and for one token decoded with a KV cache (M = 1):");
    {
      struct Product {
        const char* name;
        int64_t K, N, per_model;  // per_model: how many of it in the model
      };
      const std::vector<Product> products = {{"q, k, v (one GEMM)", E, 3 * E, L},
                                             {"out_proj", E, E, L},
                                             {"fc1", E, 4 * E, L},
                                             {"fc2", 4 * E, E, L},
                                             {"head", E, V, 1}};
      std::cout << ">>> matmul_cost(M, K, N) = {2 M K N, 4 (K N + M K + M N)}   (in this file)\n"
                << "    product               K x N        M = 1,024: FLOP/byte     M = 1: FLOP/byte\n";
      MatmulCost batch_total{0, 0}, one_total{0, 0};
      for (const Product& p : products) {
        MatmulCost big = matmul_cost(B * T, p.K, p.N), one = matmul_cost(1, p.K, p.N);
        batch_total = {batch_total.flops + double(p.per_model) * big.flops,
                       batch_total.bytes + double(p.per_model) * big.bytes};
        one_total = {one_total.flops + double(p.per_model) * one.flops,
                     one_total.bytes + double(p.per_model) * one.bytes};
        std::string kn = std::to_string(p.K) + " x " + std::to_string(p.N);
        std::cout << "    " << p.name << std::string(22 - std::string(p.name).size(), ' ') << kn
                  << std::string(13 - kn.size(), ' ') << fmt("%20.1f", big.flops / big.bytes)
                  << fmt("%21.2f", one.flops / one.bytes) << "\n";
      }
      std::cout << "    all of them (x " << L << " blocks)" << std::string(23, ' ')
                << fmt("%12.1f", batch_total.flops / batch_total.bytes)
                << fmt("%21.2f", one_total.flops / one_total.bytes) << "\n";
      // Attention's own products per head: scores q k^T [T, D] @ [D, T], then weights @ v [T, T] @ [T, D].
      MatmulCost scores = matmul_cost(T, E / 4, T), mix = matmul_cost(T, T, E / 4);
      std::cout << "    attention per head: q k^T (16 x 16 @ 16 x 16) " << fmt("%.1f", scores.flops / scores.bytes)
                << ", weights @ v " << fmt("%.1f", mix.flops / mix.bytes) << " FLOP/byte\n";
    }
    say("A training batch reuses each weight for 1,024 tokens: about 20 FLOPs per byte, enough to\n"
        "keep the cores busy once the operands sit in cache. Decoding one token uses each weight\n"
        "once: half a FLOP per byte, which no core can feed from memory at full speed. That is why\n"
        "generation is memory-bound and batched serving pays off; and this small model's attention,\n"
        "at T = 16, is bound by memory and fixed costs, not arithmetic.");
    tt::manual_seed(0);
    nn::GPT m(nn::GPTOptions(V, T).n_layer(L).n_embd(E).n_head(4));
    tt::optim::AdamW opt(m.parameters(), tt::optim::AdamWOptions(1e-3));
    Tensor ids = tt::randint(V, {B, T}), targets = tt::randint(V, {B, T});
    auto train_step = [&] {
      Tensor loss = tt::F::cross_entropy(m(ids).reshape({-1, V}), targets.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
    };
    auto forward_backward = [&] {
      Tensor loss = tt::F::cross_entropy(m(ids).reshape({-1, V}), targets.reshape({-1}));
      m.zero_grad();
      loss.backward();
    };
    auto forward_only = [&] {
      tt::NoGradGuard no_grad;
      m(ids);
    };
    train_step();  // warm up: the optimizer's state, the allocator's cache
    double ms_train = best_ms(train_step, 10), ms_fb = best_ms(forward_backward, 10), ms_fwd = best_ms(forward_only, 10);
    double tokens = double(B * T), fwd_flops = train_per_token / 3 * tokens;
    std::cout << ">>> best_ms(...) of a forward, a forward and backward, a whole training step, on B = 64\n"
              << "    sequences of T = 16 (1,024 tokens); " << timing_note(10) << "\n"
              << "    forward             " << fmt("%6.2f", ms_fwd) << " ms   " << fmt("%8.0f", tokens / ms_fwd * 1e3)
              << " tokens/s   " << fmt("%5.1f", fwd_flops / ms_fwd * 1e-6) << " GFLOP/s\n"
              << "    forward + backward  " << fmt("%6.2f", ms_fb) << " ms   " << fmt("%8.0f", tokens / ms_fb * 1e3)
              << " tokens/s   " << fmt("%5.1f", 3 * fwd_flops / ms_fb * 1e-6) << " GFLOP/s\n"
              << "    training step       " << fmt("%6.2f", ms_train) << " ms   " << fmt("%8.0f", tokens / ms_train * 1e3)
              << " tokens/s   " << fmt("%5.1f", 3 * fwd_flops / ms_train * 1e-6) << " GFLOP/s\n"
              << "    forward + backward / forward = " << fmt("%.1f", ms_fb / ms_fwd) << "   (the FLOPs say 3)\n";
  }
  say("(Timings are from this machine, now; rerun to compare.) The FLOPs say that a forward and\n"
      "backward costs 3 forwards. Where the measured ratio is close to 3 (3.0 in one single-threaded\n"
      "run on a 2-core AMD EPYC, Zen 3), the rule holds even for this small model: its time goes\n"
      "into matrix products. Where it is well above 3, fixed costs are showing: each op's\n"
      "dispatch, the backward's autograd nodes and saved tensors, gradients allocated and summed,\n"
      "or, with several threads on a busy machine, threads waiting for each other. AdamW's update\n"
      "adds little: one pass over 100,000 parameters. Wider models spend a larger share of their\n"
      "time in large matrix products, and run closer to the machine's peak.");
}

// -----------------------------------------------------------------------------------------------

// The milestone, which steps 8 and 9 read: the task, its held-out rows and the GPT trained on
// them. Kept by step 7, or trained again (quietly) when step 7 did not run.
// What a training run of the milestone's recipe reached (sections 7 and 11).
struct TrainingRecord {
  double first_loss = 0, last_loss = 0;  // the first step's, and the mean of the last 25
  double token_acc = 0, exact_acc = 0;   // held-out, 1,000 rows, at the end
  std::vector<double> exact_every_50;    // held-out exact-sequence accuracy every 50 steps
};

struct Milestone {
  std::unique_ptr<nn::GPT> gpt;
  data::SequenceTask task;
  data::SequenceBatch test;
  TrainingRecord record;
};
std::unique_ptr<Milestone> g_milestone;

void step_7_milestone() {
  std::unique_ptr<nn::GPT> gpt_again = step_4_gpt_again();  // step 4's GPT, trained here
  nn::GPT& gpt = *gpt_again;
  say("The task (tinytorch/data/sequence_tasks.h): a row of 8 random digits, '>', then the same\n"
      "digits reversed. The model reads the sequence without its last token and is scored only\n"
      "on the answer (targets -100 elsewhere: the prompt's digits are random, nothing could\n"
      "predict them). Each answer digit sits at a position that mirrors its source, so a model\n"
      "must look back to a place that depends on where it is: attention's job.");
  RUN(data::SequenceTask task = data::make_sequence_task(data::SequenceTaskKind::kReverse, 8, 0));  // length, seed
  RUN(data::SequenceBatch example = task.make_batch(tt::tensor({{3, 1, 4, 1, 5, 9, 2, 6}})));
  SHOW(task.decode(example.input.select(0, 0)));
  SHOW(example.target);
  SHOW(task.decode(example.prompt.select(0, 0)));
  say("Held-out rows: one digit row in eight belongs to the test split, fixed by a hash of its\n"
      "digits; sample() never returns those, held_out(n) returns only those. With 10^8 possible\n"
      "rows and 300 x 64 = 19,200 seen in training, the model cannot memorize: it must learn the\n"
      "rule. Exact-sequence accuracy (all 8 answer digits right) is read from one teacher-forced\n"
      "forward: it equals greedy generation's, since both see the same tokens up to the first\n"
      "mistake (checked in section 8).");
  double milestone_acc = 0, first_loss = 0, last_loss = 0;
  TrainingRecord record;
  RUN(data::SequenceBatch test = task.held_out(1000));
  {
    RUN(tt::optim::AdamW opt(gpt.parameters(), tt::optim::AdamWOptions(3e-3).weight_decay(0.0)));
    RUN(const int64_t steps = 300);
    RUN(tt::optim::CosineAnnealingLR cosine(opt, steps));
    say("Each step: a fresh batch of 64 training rows; forward; cross-entropy over the answer\n"
        "positions; zero_grad; backward; step; the schedule. Every 25 steps the loss averaged\n"
        "since the last line, and the held-out accuracies (1,000 rows, eval mode, no grad).");
    std::cout << ">>> for (step = 1 .. 300) { b = task.sample(64); cross_entropy(gpt(b.input), b.target); ... }\n";
    std::cout << "     step   lr at end   train loss   held-out token acc   exact-sequence acc\n";
    auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t V = task.vocab_size();
    for (int64_t step = 1; step <= steps; ++step) {
      data::SequenceBatch b = task.sample(64);
      Tensor loss = tt::F::cross_entropy(gpt(b.input).reshape({-1, V}), b.target.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
      cosine.step();
      loss_sum += loss.item<double>();
      if (step == 1) first_loss = loss.item<double>();
      if (step == 1 || step % 25 == 0) {
        double mean_loss = loss_sum / double(step == 1 ? 1 : 25);
        loss_sum = 0;
        last_loss = mean_loss;
        tt::NoGradGuard no_grad;
        gpt.eval();
        data::SequenceAccuracy acc = data::sequence_accuracy(gpt(test.input), test.target);
        gpt.train();
        milestone_acc = acc.sequence;
        if (step % 50 == 0) record.exact_every_50.push_back(acc.sequence);
        record.token_acc = acc.token;
        std::cout << "    " << fmt("%5.0f", double(step)) << fmt("%12.5f", cosine.get_last_lr()[0])
                  << fmt("%13.4f", mean_loss) << fmt("%20.1f%%", 100 * acc.token)
                  << fmt("%20.1f%%", 100 * acc.sequence) << "\n";
      }
    }
    std::cout << "    (" << steps << " steps, " << steps * 64 << " rows, in " << fmt("%.1f", seconds_since(t0))
              << " s: one run, " << tt::get_num_threads() << " threads)\n";
  }
  std::cout << "\n    held-out exact-sequence accuracy " << fmt("%.1f%%", 100 * milestone_acc) << " on "
            << test.input.size(0) << " rows never trained on: "
            << (milestone_acc >= 0.99 ? "the milestone (>= 99%) is reached.\n" : "BELOW the 99% target.\n");
  say("The first loss, " + fmt("%.2f", first_loss) + ", is about ln 11 = 2.40: a uniform guess over the 11 tokens.\n"
      "It ends at " + fmt("%.4f", last_loss) + ". The token accuracy climbs first; the exact-sequence accuracy,\n"
      "which needs all 8 digits right at once, follows. How does the model do it? Ask its\n"
      "attention. For each head, the key that each answer position attends to most, on one\n"
      "held-out row (answer position 8 + i predicts digit 7 - i, which sits at position 7 - i):");
  {
    tt::NoGradGuard no_grad;
    gpt.eval();
    for (const auto& block : blocks_of(gpt)) block->record_attention(true);
    Tensor row = test.input.slice(0, 0, 1);
    gpt(row);
    std::cout << ">>> block.record_attention(true); gpt(row); block.last_attention()   [1, H, T, T] per block\n";
    std::cout << "    row: " << task.decode(row.select(0, 0)) << "   queries at positions 8 .. 15\n";
    std::vector<std::shared_ptr<nn::TransformerBlock>> blocks = blocks_of(gpt);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto& blk = blocks[i];
      Tensor w = blk->last_attention().select(0, 0);  // [H, T, T]
      for (int64_t h = 0; h < w.size(0); ++h) {
        Tensor answer_rows = w.select(0, h).slice(0, 8, 16);  // queries 8 .. 15: [8, T]
        std::vector<int64_t> argmax = answer_rows.argmax(-1).to_vector<int64_t>();
        std::vector<double> top = std::get<0>(answer_rows.max(-1, false)).to(tt::kFloat64).to_vector<double>();
        bool mirror = true;
        double mean_top = 0;
        std::string keys;
        for (size_t q = 0; q < argmax.size(); ++q) {
          mirror = mirror && argmax[q] == int64_t(7 - q);
          mean_top += top[q] / double(top.size());
          keys += (q ? " " : "") + std::to_string(argmax[q]);
        }
        std::cout << "    block " << i << " head " << h << ": keys " << keys << "   mean weight "
                  << fmt("%.2f", mean_top) << (mirror ? "   <- the mirror" : "") << "\n";
      }
    }
    std::cout << ">>> tt::viz::save_attention_heatmap(figure(\"trained_block<i>.png\"), maps [H, T, T], labels,\n"
              << "                                    labels)\n";
    std::vector<std::string> labels = task.tokens(row.select(0, 0));
    for (size_t i = 0; i < blocks.size(); ++i) {
      tt::viz::HeatmapOptions hopt;
      hopt.title = "trained GPT, block " + std::to_string(i) + ": " + task.decode(row.select(0, 0));
      std::string path = figure("trained_block" + std::to_string(i) + ".png");
      tt::viz::save_attention_heatmap(path, blocks[i]->last_attention().select(0, 0), labels, labels, hopt);
      blocks[i]->record_attention(false);
      std::cout << "    wrote " << path << "\n";
    }
    gpt.train();
  }
  say("(One panel per head and their mean; rows are queries, columns keys. Module 12's\n"
      "walkthrough draws the same kind of map for an untrained layer, in walkthrough_12_figures\n"
      "beside its executable: nearly flat there, a sharp anti-diagonal here.)\n"
      "Nobody told the model where to look. The mirrored position was found by gradient descent\n"
      "on the loss, through the learned position embeddings and the query-key products.");
  record.first_loss = first_loss;
  record.last_loss = last_loss;
  record.exact_acc = milestone_acc;
  g_milestone = std::make_unique<Milestone>(Milestone{std::move(gpt_again), task, test, record});
}

// -----------------------------------------------------------------------------------------------

Milestone& milestone() {
  if (!g_milestone) quietly(step_7_milestone);
  return *g_milestone;
}

void step_8_generation() {
  Milestone& m = milestone();
  nn::GPT& gpt = *m.gpt;
  const data::SequenceTask& task = m.task;
  const data::SequenceBatch& test = m.test;
  say("generate(prompt, n) appends n tokens, one at a time: run the model, take the last\n"
      "position's logits, choose a token, append it, repeat. It switches to eval mode and\n"
      "NoGradGuard for the duration and restores the mode afterwards. Greedy takes the argmax:");
  RUN(Tensor prompts = test.prompt.slice(0, 0, 4));
  RUN(Tensor greedy = gpt.generate(prompts, 8, nn::GenerateOptions().greedy(true)));
  for (int64_t r = 0; r < 4; ++r) std::cout << "    " << task.decode(greedy.select(0, r)) << "\n";
  RUN(Tensor all_greedy = gpt.generate(test.prompt, 8, nn::GenerateOptions().greedy(true)));
  SHOW(exact_fraction(all_greedy, test.answer));
  say("the same as the teacher-forced exact accuracy above, as promised. Sampling instead draws\n"
      "each token from softmax(logits / temperature), optionally among the top_k largest logits\n"
      "only. The distribution of the first answer digit of the first prompt, at four temperatures\n"
      "(the three most likely tokens):");
  {
    Tensor logits;
    {
      tt::NoGradGuard no_grad;
      gpt.eval();
      logits = gpt(test.prompt.slice(0, 0, 1)).select(1, 8).select(0, 0);
      gpt.train();
    }
    std::vector<double> l = logits.to(tt::kFloat64).to_vector<double>();
    std::vector<size_t> order(l.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l[a] > l[b]; });
    for (double temp : {0.5, 1.0, 2.0, 5.0}) {
      std::vector<double> p = softmax_at(l, temp);
      std::cout << "    temperature " << fmt("%3.1f", temp) << ":";
      for (int i = 0; i < 3; ++i)
        std::cout << "   '" << task.vocab()[order[size_t(i)]] << "' " << fmt("%.4f", p[order[size_t(i)]]);
      std::cout << "\n";
    }
  }
  say("Low temperature sharpens towards greedy, high temperature flattens towards uniform. Over\n"
      "the 1,000 held-out prompts, the fraction answered exactly:");
  {
    struct Setting {
      const char* name;
      nn::GenerateOptions options;
    };
    tt::Generator g(14);
    std::vector<Setting> settings = {
        {"greedy", nn::GenerateOptions().greedy(true)},
        {"temperature 1", nn::GenerateOptions().temperature(1.0).generator(&g)},
        {"temperature 2", nn::GenerateOptions().temperature(2.0).generator(&g)},
        {"temperature 4", nn::GenerateOptions().temperature(4.0).generator(&g)},
        {"temperature 4, top_k 2", nn::GenerateOptions().temperature(4.0).top_k(2).generator(&g)},
    };
    std::cout << ">>> exact_fraction(gpt.generate(test.prompt, 8, options), test.answer)\n";
    for (const Setting& s : settings)
      std::cout << "    " << s.name << std::string(26 - std::string(s.name).size(), ' ')
                << fmt("%.1f%%", 100 * exact_fraction(gpt.generate(test.prompt, 8, s.options), test.answer)) << "\n";
  }
  say("A task with one right answer wants greedy decoding; sampling is for text, where many\n"
      "continuations are good and greedy ones repeat themselves. top_k cuts off the long tail of\n"
      "unlikely tokens, which at high temperature is where the mistakes come from. The samples\n"
      "come from a generator, so a seed fixes them:");
  RUN(tt::Generator g1(7));
  RUN(tt::Generator g2(7));
  RUN(nn::GenerateOptions hot = nn::GenerateOptions().temperature(3.0));
  SHOW(task.decode(gpt.generate(prompts, 8, hot.generator(&g1)).select(0, 0)));
  SHOW(task.decode(gpt.generate(prompts, 8, hot.generator(&g2)).select(0, 0)));
  SHOW_ERROR(gpt.generate(prompts, 8, nn::GenerateOptions().temperature(0.0)));
}

// -----------------------------------------------------------------------------------------------

void step_9_kv_cache() {
  Milestone& m = milestone();
  nn::GPT& gpt = *m.gpt;
  const data::SequenceBatch& test = m.test;
  say("Without a cache, each new token runs the model over the whole sequence again: token t\n"
      "costs a forward of t positions, although the keys and values of positions 0 .. t-1 are\n"
      "exactly those of the previous step (causality: later tokens cannot change them). A\n"
      "KVCache per block keeps them; each step then feeds only the new token, whose query\n"
      "attends to every cached key. The tokens are the same:");
  RUN(Tensor cached = gpt.generate(test.prompt, 8, nn::GenerateOptions().greedy(true)));
  RUN(Tensor recomputed = gpt.generate(test.prompt, 8, nn::GenerateOptions().greedy(true).use_cache(false)));
  SHOW((cached == recomputed).to(tt::kInt64).min().item<int64_t>() == 1);
  say("and so are the logits, position by position, to float32 rounding. forward_cached is the\n"
      "step generate() runs: ids at positions cache.length() .. + t - 1, appended to one cache\n"
      "per block.");
  {
    tt::NoGradGuard no_grad;
    gpt.eval();
    RUN(std::vector<nn::KVCache> caches(2, nn::KVCache(16)));  // one per block, capacity 16 positions
    RUN(Tensor row = test.input.slice(0, 0, 1));
    RUN(Tensor full = gpt(row));
    RUN(Tensor first9 = gpt.forward_cached(row.slice(1, 0, 9), caches));
    double worst = max_abs(first9 - full.slice(1, 0, 9));
    for (int64_t t = 9; t < 16; ++t) {
      Tensor step = gpt.forward_cached(row.slice(1, t, t + 1), caches);  // [1, 1, V]
      worst = std::max(worst, max_abs(step - full.slice(1, t, t + 1)));
    }
    std::cout << ">>> then one token at a time, positions 9 .. 15: max |cached - full| over all logits\n    "
              << fmt("%.2g", worst) << "\n";
    SHOW(caches[0].length());
    SHOW(caches[0].memory_bytes());
    gpt.train();
  }
  say("Memory: keys and values, [B, H, capacity, D] each, in float32, per block: 2 x 1 x 16 x 64\n"
      "x 4 bytes = 8 KB here. In general 2 x B x capacity x E x 4 bytes per layer; for GPT-2\n"
      "small (12 layers, E = 768, 1,024 positions) that is 75 MB per sequence, and it grows with\n"
      "the batch and the context: at long contexts the cache, not the weights, fills the memory.\n"
      "The speed, on a wider untrained model (4 blocks, E = 128) with room for 128 positions,\n"
      "generating 112 tokens after a 16-token prompt:");
  {
    tt::manual_seed(0);
    nn::GPT big(nn::GPTOptions(64, 128).n_layer(4).n_embd(128).n_head(4));
    Tensor prompt = tt::randint(64, {1, 16});
    auto with_cache = [&] { big.generate(prompt, 112, nn::GenerateOptions().greedy(true)); };
    auto without = [&] { big.generate(prompt, 112, nn::GenerateOptions().greedy(true).use_cache(false)); };
    double ms_cache = best_ms(with_cache, 3), ms_full = best_ms(without, 1);
    std::vector<nn::KVCache> caches(4, nn::KVCache(128));
    big.forward_cached(prompt, caches);
    std::cout << ">>> best_ms(generate with the cache), best_ms(generate with use_cache(false))   (best of 3\n"
              << "    and of 1, " << tt::get_num_threads() << " threads)\n"
              << "    with the cache     " << fmt("%8.1f", ms_cache) << " ms   " << fmt("%6.0f", 112 / ms_cache * 1e3)
              << " tokens/s\n"
              << "    recomputing        " << fmt("%8.1f", ms_full) << " ms   " << fmt("%6.0f", 112 / ms_full * 1e3)
              << " tokens/s\n"
              << "    speedup " << fmt("%.1f", ms_full / ms_cache) << "x;   cache memory: 4 blocks x "
              << caches[0].memory_bytes() << " bytes = " << fmt("%.0f", 4 * caches[0].memory_bytes() / 1024.0) << " KB\n";
  }
  say("Recomputing costs a sum over t of t positions, quadratic in the length; the cache makes\n"
      "each step one position: linear. The gap widens with the length. (The attention of the new\n"
      "query against t cached keys still grows with t, but it is a small part at this size.)");
}


// -----------------------------------------------------------------------------------------------

// The four ways of giving the GPT positions that sections 10 and 11 compare.
struct PositionVariant {
  const char* name;
  nn::PositionEncoding positions;
  bool qk_norm;
};
const std::vector<PositionVariant> kPositionVariants = {{"learned", nn::PositionEncoding::kLearned, false},
                                                        {"sinusoidal", nn::PositionEncoding::kSinusoidal, false},
                                                        {"rotary", nn::PositionEncoding::kRotary, false},
                                                        {"rotary + QK-norm", nn::PositionEncoding::kRotary, true}};

// The milestone's GPT (section 4's options) with the given positions and QK-norm (and context).
nn::GPTOptions milestone_options(nn::PositionEncoding positions, bool qk_norm, int64_t context = 16) {
  return nn::GPTOptions(11, context).n_layer(2).n_embd(64).n_head(4).positions(positions).qk_norm(qk_norm);
}

void step_10_positions() {
  say("So far the positions were learned: a table pos_emb [16, 64], one trained row per position,\n"
      "added to the token vectors (GPT-2). GPTOptions::positions offers two more (module 10 built\n"
      "them; here they are inside the model):\n"
      "    kLearned      h = tok_emb(ids) + pos_emb(0 .. T-1)           (the default)\n"
      "    kSinusoidal   h = tok_emb(ids) + pe[0 .. T-1], the fixed sin/cos table, a buffer\n"
      "    kRotary       h = tok_emb(ids); every attention rotates each head's q and k by angles\n"
      "                  proportional to their positions (RoPE), after the split into heads\n"
      "and qk_norm(true) puts an RMSNorm over the head dim on each q and k (with a learned weight\n"
      "[D] each), before the rotation. The four models compared in section 11:");
  RUN(nn::GPT rotary(milestone_options(nn::PositionEncoding::kRotary, false)));
  std::cout << ">>> for each: the parameters, and what its state dict holds for positions\n";
  for (const PositionVariant& v : kPositionVariants) {
    nn::GPT m(milestone_options(v.positions, v.qk_norm));
    nn::StateDict sd = m.state_dict();
    std::string held = sd.contains("pos_emb.weight") ? "pos_emb.weight [16, 64], trained"
                       : sd.contains("pos_enc.pe")    ? "pos_enc.pe [16, 64], fixed"
                                                      : "nothing";
    if (v.qk_norm) held += "; q_norm, k_norm [16] per block";
    std::cout << "    " << v.name << std::string(18 - std::string(v.name).size(), ' ') << m.num_parameters()
              << " parameters   " << held << "\n";
  }
  say("Rotary drops the 1,024 numbers of the table, QK-norm adds 2 x 16 per block. RoPE holds no\n"
      "parameters: the rotation is a fixed function of the position. The attention says so:");
  std::cout << *rotary.blocks->ptr<nn::TransformerBlock>(0)->attn << "\n";
  say("Rotating q at position m and k at position n turns their dot product by the angle of\n"
      "n - m only (Note [rotary pairing]): the scores see distances, not places. Shift every\n"
      "position of a causal block by the same offset (MultiHeadAttentionForward::position_offset)\n"
      "and nothing changes; the same block without the rotation computes something else:");
  {
    tt::manual_seed(10);
    nn::TransformerBlock block(64, 4, nn::TransformerBlockOptions().rotary(true));
    nn::TransformerBlock plain(64, 4);
    plain.load_state_dict(block.state_dict());  // the same weights: RoPE adds no keys
    tt::NoGradGuard no_grad;
    Tensor x = tt::randn({2, 16, 64});
    Tensor base = block(x);
    std::cout << ">>> max |block.forward(x, {}, true, nullptr, offset) - block(x)|   (positions from offset)\n";
    for (int64_t offset : {1, 100, 10000})
      std::cout << "    offset " << fmt("%5.0f", double(offset)) << ":  "
                << fmt("%.2g", max_abs(block.forward(x, {}, true, nullptr, offset) - base)) << "\n";
    std::cout << "    the same weights without rotary: " << fmt("%.2g", max_abs(plain(x) - base)) << "\n";
  }
  say("(Float32 rounding of the angles, not zero.) With a KV cache each new token is rotated for\n"
      "its absolute position, the cache length, and the cached keys were rotated once, when they\n"
      "were appended; decoding one token at a time gives the full forward's logits:");
  {
    tt::manual_seed(11);
    nn::GPT gpt(milestone_options(nn::PositionEncoding::kRotary, true));
    gpt.eval();
    tt::NoGradGuard no_grad;
    Tensor ids = tt::randint(11, {1, 16});
    Tensor full = gpt(ids);
    std::vector<nn::KVCache> caches(2, nn::KVCache(16));
    double worst = max_abs(gpt.forward_cached(ids.slice(1, 0, 4), caches) - full.slice(1, 0, 4));
    for (int64_t t = 4; t < 16; ++t)
      worst = std::max(worst, max_abs(gpt.forward_cached(ids.slice(1, t, t + 1), caches) - full.slice(1, t, t + 1)));
    std::cout << ">>> rotary + QK-norm: forward_cached (4 tokens, then 1 at a time) against gpt(ids)\n    max |diff| "
              << fmt("%.2g", worst) << "\n";
  }
  say("QK-norm divides each head's q and k by their RMS, so the size of W_q and W_k no longer\n"
      "sets how sharp the softmax is: the learned weights of q_norm and k_norm do. Scale W_q and\n"
      "W_k (and their biases) by 10 in a block with it and in one without:");
  {
    tt::manual_seed(12);
    Tensor x = tt::randn({2, 16, 64});
    for (bool qk_norm : {true, false}) {
      nn::TransformerBlock block(64, 4, nn::TransformerBlockOptions().qk_norm(qk_norm));
      tt::NoGradGuard no_grad;
      Tensor before = block(x);
      for (const auto& proj : {block.attn->q_proj, block.attn->k_proj}) {
        proj->weight.mul_(10.0);
        proj->bias.mul_(10.0);
      }
      std::cout << "    " << (qk_norm ? "with QK-norm:    " : "without QK-norm: ") << "max |change| "
                << fmt("%.2g", max_abs(block(x) - before)) << "\n";
    }
  }
  say("Without it the scores grow 100 times and the softmax turns nearly one-hot; large logits of\n"
      "this kind are what QK-norm was introduced to prevent in large models (Dehghani et al. 2023).\n"
      "The rules, checked:");
  SHOW_ERROR(nn::GPT(nn::GPTOptions(11, 16).n_embd(36).n_head(4).positions(nn::PositionEncoding::kRotary)));
  SHOW_ERROR(nn::position_encoding("alibi"));
  RUN(nn::GPT learned(milestone_options(nn::PositionEncoding::kLearned, false)));
  SHOW_ERROR(rotary.load_state_dict(learned.state_dict()));
  say("A checkpoint loads only into a model built with the same positions and QK-norm: the keys\n"
      "differ, and load_state_dict names them instead of loading half a model.");
}

// -----------------------------------------------------------------------------------------------

constexpr int64_t kPositionsBatch = 64;  // rows per step in section 11, as in the milestone

// One row of section 11: the milestone's recipe (seed 0, AdamW 3e-3, cosine over `steps` steps
// of 64 rows) with the given positions, and what it reached.
struct PositionsRun {
  TrainingRecord record;
  double seconds = 0;
  std::unique_ptr<nn::GPT> gpt;
};

PositionsRun train_positions(nn::PositionEncoding positions, bool qk_norm, int64_t steps) {
  tt::manual_seed(0);
  data::SequenceTask task = data::make_sequence_task(data::SequenceTaskKind::kReverse, 8, 0);
  const int64_t V = task.vocab_size();
  PositionsRun run;
  run.gpt = std::make_unique<nn::GPT>(milestone_options(positions, qk_norm));
  nn::GPT& gpt = *run.gpt;
  tt::optim::AdamW opt(gpt.parameters(), tt::optim::AdamWOptions(3e-3).weight_decay(0.0));
  tt::optim::CosineAnnealingLR cosine(opt, steps);
  data::SequenceBatch test = task.held_out(1000);
  auto evaluate = [&] {
    tt::NoGradGuard no_grad;
    gpt.eval();
    data::SequenceAccuracy acc = data::sequence_accuracy(gpt(test.input), test.target);
    gpt.train();
    return acc;
  };
  auto t0 = std::chrono::steady_clock::now();
  double tail = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    data::SequenceBatch b = task.sample(kPositionsBatch);
    Tensor loss = tt::F::cross_entropy(gpt(b.input).reshape({-1, V}), b.target.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    cosine.step();
    if (step == 1) run.record.first_loss = loss.item<double>();
    if (step > steps - 25) tail += loss.item<double>() / 25.0;
    if (step % 50 == 0) run.record.exact_every_50.push_back(evaluate().sequence);
  }
  run.seconds = seconds_since(t0);
  run.record.last_loss = tail;
  data::SequenceAccuracy acc = evaluate();
  run.record.token_acc = acc.token;
  run.record.exact_acc = acc.sequence;
  return run;
}

void step_11_positions_compared() {
  say("The milestone's recipe (section 7: seed 0, the same batches, AdamW at 3e-3, cosine over 300\n"
      "steps of 64 rows) with each choice of positions. Held-out exact-sequence accuracy every 50\n"
      "steps, then the end of each run (1,000 held-out rows; loss: the mean of the last 25 steps):");
  const int64_t steps = 300;
  // Learned is section 7's milestone itself (the same seed, batches and recipe): not trained again.
  std::vector<PositionsRun> runs(1);
  runs[0].record = milestone().record;
  for (size_t r = 1; r < kPositionVariants.size(); ++r)
    runs.push_back(train_positions(kPositionVariants[r].positions, kPositionVariants[r].qk_norm, steps));
  std::cout << ">>> train_positions(positions, qk_norm, 300 steps)   (in this file; learned: section 7's run)\n"
            << "    step   learned   sinusoidal     rotary   rotary + QK-norm\n";
  for (size_t i = 0; i < runs[0].record.exact_every_50.size(); ++i) {
    std::cout << "    " << fmt("%4.0f", 50.0 * double(i + 1));
    for (size_t r = 0; r < runs.size(); ++r)
      std::cout << fmt(r == 3 ? "%18.1f%%" : r == 0 ? "%9.1f%%" : "%11.1f%%", 100 * runs[r].record.exact_every_50[i]);
    std::cout << "\n";
  }
  std::cout << "\n    positions          first loss   final loss   token acc   exact acc   time (one run, "
            << tt::get_num_threads() << " threads)\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const TrainingRecord& rec = runs[r].record;
    const std::string name = kPositionVariants[r].name;
    std::cout << "    " << name << std::string(18 - name.size(), ' ')
              << fmt("%11.4f", rec.first_loss) << fmt("%13.4f", rec.last_loss) << fmt("%11.1f%%", 100 * rec.token_acc)
              << fmt("%11.1f%%", 100 * rec.exact_acc)
              << (r == 0 ? std::string("   (section 7)") : fmt("%9.1f s", runs[r].seconds)) << "\n";
  }
  say("Learned positions win on this task: reversal is about places (answer position 8 + i reads\n"
      "position 7 - i), and a table can store one vector per place. Rotary attention sees only\n"
      "distances, and the distance to the mirrored digit changes with every answer position, so\n"
      "each head must work out where the '>' is first: it learns, slower, and QK-norm, which\n"
      "keeps the scores' scale in the hands of two small learned weights, speeds it up. What\n"
      "rotary buys is elsewhere: no table to outgrow, scores that do not change when the whole\n"
      "sequence shifts (section 10), which is why long-context models use it.\n"
      "Sinusoidal, a table of places too, learns the task, a little behind learned. It works only\n"
      "because the GPT multiplies the token vectors by sqrt(E) = 8 before adding the table, as\n"
      "Vaswani et al. did: the table's entries are sines and cosines of size 1, GPT-2's init draws\n"
      "token vectors with std 0.02, and added as they are, the stream is almost all position. (On\n"
      "the course machine, without the factor, this run stayed at the loss of a uniform guess over\n"
      "the digits, ln 10 = 2.30, for all 300 steps: 0% exact.)\n"
      "Longer than trained? A rotary model has no table, so its weights load into a GPT with a\n"
      "longer context; a learned one cannot (its table has 16 rows). Held-out exact-sequence\n"
      "accuracy on reversing 8, 9 and 10 digits, the models as trained on 8 (sinusoidal: its\n"
      "weights with a longer table, the same formula):");
  {
    std::cout << ">>> longer.load_state_dict(trained state dict, pos_enc.pe left out); sequence_accuracy\n"
              << "    digits   sinusoidal     rotary   rotary + QK-norm\n";
    for (int64_t digits : {8, 9, 10}) {
      data::SequenceTask longer_task = data::make_sequence_task(data::SequenceTaskKind::kReverse, digits, 0);
      data::SequenceBatch rows = longer_task.held_out(1000);
      std::cout << "    " << fmt("%6.0f", double(digits));
      for (size_t r = 1; r < runs.size(); ++r) {
        const PositionVariant& v = kPositionVariants[r];
        nn::GPT longer(milestone_options(v.positions, v.qk_norm, 2 * digits));
        nn::StateDict sd = runs[r].gpt->state_dict();
        nn::StateDict kept;
        for (const auto& [key, t] : sd)
          if (key != "pos_enc.pe") kept.insert(key, t);
        longer.load_state_dict(kept, /*strict=*/false);
        tt::NoGradGuard no_grad;
        longer.eval();
        double acc = data::sequence_accuracy(longer(rows.input), rows.target).sequence;
        std::cout << fmt(r == 3 ? "%18.1f%%" : r == 1 ? "%12.1f%%" : "%10.1f%%", 100 * acc);
      }
      std::cout << "\n";
    }
  }
  say("Relative positions are not length generalization by themselves: a 9-digit row puts the\n"
      "mirrored digit at distances no training row had, and every model fails on it (rotary with\n"
      "QK-norm keeps a few percent). Models that extrapolate train on varied lengths too.\n"
      "The attention maps of the rotary + QK-norm model, beside section 7's:");
  // The attention of the rotary + QK-norm model, beside the learned one's (section 7).
  {
    data::SequenceTask task = data::make_sequence_task(data::SequenceTaskKind::kReverse, 8, 0);
    nn::GPT& gpt = *runs[3].gpt;
    tt::NoGradGuard no_grad;
    gpt.eval();
    Tensor row = task.held_out(1).input;
    std::vector<std::shared_ptr<nn::TransformerBlock>> blocks = blocks_of(gpt);
    for (const auto& b : blocks) b->record_attention(true);
    gpt(row);
    std::vector<std::string> labels = task.tokens(row.select(0, 0));
    for (size_t i = 0; i < blocks.size(); ++i) {
      tt::viz::HeatmapOptions hopt;
      hopt.title = "rotary + QK-norm, block " + std::to_string(i) + ": " + task.decode(row.select(0, 0));
      std::string path = figure("trained_rotary_qknorm_block" + std::to_string(i) + ".png");
      tt::viz::save_attention_heatmap(path, blocks[i]->last_attention().select(0, 0), labels, labels, hopt);
      blocks[i]->record_attention(false);
      std::cout << "    wrote " << path << "\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_14";
  std::filesystem::path exe(argv[0]);
  g_out_dir =
      ((exe.has_parent_path() ? exe.parent_path() : std::filesystem::path(".")) / "walkthrough_14_figures").string();
  w.usage = "[DIR]";
  w.usage_help = "  DIR         where the PNG figures go (default: walkthrough_14_figures beside the executable)\n";
  w.parse = [](int, char** argv, int i) {
    if (argv[i][0] == '-') return 0;
    g_out_dir = argv[i];
    return 1;
  };
  w.begin = [] {
    g_out_dir = std::filesystem::absolute(g_out_dir).lexically_normal().string();
    std::cout << "Module 14 - the transformer: the block, pre-norm, the GPT, its costs; milestone: a\n"
                 "tiny GPT that learns to reverse digits; then generation, the KV cache, and positions\n"
                 "inside attention (learned, sinusoidal, rotary, QK-norm).\n";
    std::cout.precision(5);
    std::filesystem::create_directories(g_out_dir);
    std::cout << "Figures go to " << g_out_dir << "\n";
  };
  w.steps = {
      {"1", "A transformer block, shape by shape", step_1_block},
      {"2", "Pre-norm against post-norm", step_2_pre_post_norm},
      {"3", "The MLP and GELU", step_3_mlp_gelu},
      {"4", "The GPT: embeddings, blocks, a final norm and a tied head", step_4_gpt},
      {"5", "Causality, checked", step_5_causality},
      {"6", "What a token costs: FLOPs and tokens per second", step_6_costs},
      {"7", "The milestone: a tiny GPT learns to reverse 8 digits", step_7_milestone},
      {"8", "Generation: greedy, temperature, top-k", step_8_generation},
      {"9", "The KV cache", step_9_kv_cache},
      {"10", "Positions inside attention: learned, sinusoidal, rotary; QK-norm", step_10_positions},
      {"11", "The milestone trained with each choice of positions", step_11_positions_compared},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Figures: trained_block{0,1}.png and\n"
              << "trained_rotary_qknorm_block{0,1}.png in\n    " << g_out_dir << "\n"
              << "(module 12's untrained maps are in walkthrough_12_figures beside walkthrough_12).\n"
              << "That is the course: every op, layer and loop of this GPT is code you have read\n"
                 "(and, in exercise mode, written).\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


