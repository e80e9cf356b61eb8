// Module 10 walkthrough: from token ids to vectors. An Embedding as a lookup table, the same
// numbers as a one-hot row times the table (and what that would cost), the backward as a
// scatter-add where repeated ids add up, padding_idx, the errors; then order: why a bag of
// vectors cannot see it, learned positions, the sinusoidal table and its dot products, and
// rotary embedding (RoPE) with its relative-position property shown numerically and decoding
// with an offset; last, what a vocabulary-sized table costs in memory and time. Run it with
// `tools/tt walkthrough 10` (or build-*/modules/walkthrough_10). Each step prints its code (after
// ">>>") and the result. Each numbered section is one function; `--step N` reruns section N alone,
// `--list` lists them.
#include <chrono>
#include <cmath>
#include <iostream>
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

// Token ids as one-hot rows: ids [*] int64 -> [*, V] float32 (rows of the identity, picked by id).
tt::Tensor one_hot(const tt::Tensor& ids, int64_t V) {
  tt::Shape s = ids.shape();
  s.push_back(V);
  return tt::eye(V).index_select(0, ids.reshape({ids.numel()})).reshape(s);
}

double max_abs(const tt::Tensor& t) { return t.abs().max().item<double>(); }

// The dot product of two vectors, as a double.
double dot_of(const tt::Tensor& a, const tt::Tensor& b) { return (a * b).sum().item<double>(); }

// One head vector v: [D] rotated for position t: RotaryEmbedding works on [*, T, D].
tt::Tensor rope_at(const tt::nn::RotaryEmbedding& rope, const tt::Tensor& v, int64_t t) {
  return rope.apply(v.reshape({1, v.size(0)}), t).reshape({v.size(0)});
}

// A row of a small table, each number in 8 columns with 3 decimals.
std::string row3(const tt::Tensor& v) {
  std::string s;
  for (double x : v.to_vector<double>()) s += fmt("%8.3f", x);
  return s;
}

// -----------------------------------------------------------------------------------------------

// The values step 1 gives its Embedding(5, 3), which steps 2, 3 and 5 use again: row v, column j
// holds 10 v + j.
void set_readable_values(tt::nn::Embedding& emb) {
  tt::NoGradGuard no_grad;
  emb.weight.copy_(tt::tensor({{0.0, 1.0, 2.0}, {10.0, 11.0, 12.0}, {20.0, 21.0, 22.0}, {30.0, 31.0, 32.0},
                               {40.0, 41.0, 42.0}}));
}

void step_1_lookup() {
  say("Text reaches a model as integer token ids: names, not quantities (id 4 is not twice id 2).\n"
      "An Embedding(V, E) holds one learned vector of E numbers per id, a weight [V, E], and\n"
      "replaces each id by its row. Five ids, three numbers each:");
  RUN(tt::nn::Embedding emb(5, 3));
  SHOW(emb);
  say("Give it values that can be read back: row v, column j holds 10 v + j.");
  std::cout << ">>> { tt::NoGradGuard no_grad; emb.weight.copy_(tt::tensor({{0.0, 1.0, 2.0}, {10.0, 11.0, 12.0}, ...})); }\n";
  set_readable_values(emb);
  RUN(tt::Tensor ids = tt::tensor({{1, 4, 1}, {0, 3, 2}}));
  SHOW(ids.dtype());
  SHOW(emb(ids));
  say("ids [B, T] = [2, 3] became vectors [B, T, E] = [2, 3, 3]: every id is replaced by a copy of\n"
      "its row (id 1 twice in the first sequence, so row 1 twice). The rule is [*] -> [*, E], for\n"
      "any shape of ids, a single id included:");
  SHOW(emb(ids).shape());
  SHOW(emb(tt::scalar_tensor(3, tt::kInt64)));
  say("The functional form takes the ids first, as torch.nn.functional.embedding does:");
  SHOW(tt::F::embedding(tt::tensor({2, 2}), emb.weight));
  say("A new table is drawn from N(0, 1), PyTorch's default (GPT-2 uses std 0.02 instead):");
  RUN(tt::manual_seed(0));
  RUN(tt::nn::Embedding big(1000, 64));
  SHOW(big.weight.mean().item<double>());
  SHOW(big.weight.std().item<double>());
}

// -----------------------------------------------------------------------------------------------

void step_2_one_hot() {
  tt::nn::Embedding emb(5, 3);  // step 1's table
  set_readable_values(emb);
  const tt::Tensor ids = tt::tensor({{1, 4, 1}, {0, 3, 2}});  // and its ids
  say("Write id v as a one-hot row: V zeros with a 1 in column v. Multiplying it by W [V, E] adds\n"
      "up V rows of W, each scaled by 0 except row v: the product IS row v. So an embedding is a\n"
      "Linear layer without bias applied to one-hot inputs, and the lookup is that product with\n"
      "the multiplications by zero skipped.");
  RUN(tt::Tensor oh = one_hot(ids, 5));
  SHOW(oh.select(0, 0));
  SHOW(oh.matmul(emb.weight.detach()).select(0, 0));
  SHOW(max_abs(oh.matmul(emb.weight.detach()) - emb(ids).detach()));
  say("Skipping them matters. For N ids, the product costs 2 N V E FLOPs and a one-hot matrix of\n"
      "N V numbers; the lookup copies N E numbers. Timed, best of 3, for N = 512 ids into a table\n"
      "of V = 8192 rows of E = 256 (forward only, one-hot matrix built outside the timing):");
  {
    const int64_t N = 512, V = 8192, E = 256;
    tt::manual_seed(1);
    tt::Tensor table = tt::randn({V, E});
    tt::Tensor toks = tt::randint(V, {N});
    tt::Tensor hot = one_hot(toks, V);
    tt::NoGradGuard no_grad;
    double lookup = best_ms([&] { (void)tt::embedding(table, toks); }, 3);
    double product = best_ms([&] { (void)hot.matmul(table); }, 3);
    std::cout << "    lookup (gather)        " << fmt("%9.3f", lookup) << " ms   moves " << fmt("%5.2f", N * E * 8 / 1e6)
              << " MB (read and write N x E floats)\n"
              << "    one-hot @ W (GEMM)     " << fmt("%9.3f", product) << " ms   " << fmt("%5.2f", 2.0 * N * V * E / 1e9)
              << " GFLOP, one-hot matrix " << fmt("%.1f", N * V * 4 / 1e6) << " MB, "
              << fmt("%.1f", 2.0 * N * V * E / (4.0 * (N * V + V * E + N * E))) << " FLOP/byte\n"
              << "    same result:           " << std::boolalpha
              << bool(max_abs(tt::embedding(table, toks) - hot.matmul(table)) == 0.0) << "\n"
              << "    (" << best_of(3) << ")\n";
  }
  say("Equal to the last bit (each output is one product by 1 plus zeros), and the lookup is\n"
      "orders of magnitude cheaper. The equivalence is still useful: it says what the gradient\n"
      "must be.");
}

// -----------------------------------------------------------------------------------------------

void step_3_backward() {
  tt::nn::Embedding emb(5, 3);  // step 1's table
  set_readable_values(emb);
  say("Y = onehot @ W, so module 05's rule for a Linear gives dW = onehot^T dY: row v of dW is the\n"
      "sum of the rows of dY whose id is v. An id used three times gets three gradients added;\n"
      "an id not used gets zero. Make the loss sum(Y * G), so dY is exactly G:");
  RUN(tt::Tensor seq = tt::tensor({1, 4, 1, 1}));
  RUN(tt::Tensor G = tt::tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 1.0, 1.0}}));
  RUN((emb(seq) * G).sum().backward());
  SHOW(emb.weight.grad());
  say("Row 1 = G[0] + G[2] + G[3] = [2, 1, 2]; row 4 = G[1] = [0, 1, 0]; rows 0, 2, 3 were not\n"
      "read and get 0. Against the one-hot formula:");
  SHOW(max_abs(emb.weight.grad() - one_hot(seq, 5).t().matmul(G)));
  say("Why add? The table row is one parameter used in three places: module 04's rule for a tensor\n"
      "used twice is that its gradients add. Writing instead of adding (a scatter that keeps the\n"
      "last write) would keep only G[3] for row 1, a silent bug. The node is PyTorch's:");
  SHOW(emb(seq).grad_fn()->name());
  say("The gradient is dense: a [V, E] tensor even though only 2 of the 5 rows are non-zero. For\n"
      "a 50,000-token vocabulary and a batch that reads a few thousand distinct ids, most of it\n"
      "is zeros (section 10). And against finite differences, in float64, with repeated ids:");
  RUN(emb.zero_grad());
  RUN(tt::manual_seed(2));
  RUN(tt::Tensor W64 = tt::randn({6, 4}, tt::kFloat64).requires_grad_());
  SHOW(bool(tt::autograd::gradcheck(
      [](const tt::autograd::TensorList& in) { return tt::embedding(in[0], tt::tensor({{0, 5, 0}, {5, 5, 2}})); }, {W64})));
}

// -----------------------------------------------------------------------------------------------

void step_4_padding_idx() {
  say("Sentences of different lengths share a batch by padding the short ones with a pad id. The\n"
      "pad should carry no meaning and never learn: padding_idx names its row, which starts at\n"
      "zero and gets no gradient.");
  RUN(tt::manual_seed(3));
  RUN(tt::nn::Embedding padded(tt::nn::EmbeddingOptions(6, 3).padding_idx(0)));
  SHOW(padded);
  SHOW(padded.weight.select(0, 0));
  RUN(tt::Tensor batch = tt::tensor({{3, 5, 2, 4}, {1, 2, 0, 0}}));
  SHOW(padded(batch).select(0, 1));
  RUN(padded(batch).sum().backward());
  SHOW(padded.weight.grad());
  say("Row 0 was read twice but its gradient is zero; row 2 was read twice and gets 2. An optimizer\n"
      "step leaves the pad row where it is:");
  RUN(tt::optim::SGD sgd(padded.parameters(), tt::optim::SGDOptions(0.5)));
  RUN(sgd.step());
  SHOW(padded.weight.select(0, 0));
  say("padding_idx does not force the output to zero: the row is read as it is (PyTorch's meaning).\n"
      "It is zero because it started at zero and never moves. Loading a table whose pad row is not\n"
      "zero gives non-zero pad vectors; the loss should also ignore pad positions (module 06's\n"
      "ignore_index), and attention should mask them (module 12).");
}

// -----------------------------------------------------------------------------------------------

void step_5_refused() {
  tt::nn::Embedding emb(5, 3);  // step 1's table
  set_readable_values(emb);
  say("Every id is checked against the table before any row is copied. A bad id names itself, its\n"
      "position in the flattened ids and the table's size:");
  SHOW_ERROR(emb(tt::tensor({{0, 1}, {5, 2}})));
  SHOW_ERROR(emb(tt::tensor({-1})));
  say("Ids must be int64 (a float id is probably a feature vector sent to the wrong layer), and\n"
      "tt::embedding takes (weight, indices) as torch.embedding does; swapped, it says so:");
  SHOW_ERROR(emb(tt::tensor({1.0, 2.0})));
  SHOW_ERROR(tt::embedding(tt::tensor({1, 2}), emb.weight));
}

// -----------------------------------------------------------------------------------------------

void step_6_order() {
  say("An embedding looks at one id at a time. Any layer that then treats the positions alike and\n"
      "combines them symmetrically (a sum, a mean, and attention in module 12) sees a bag of\n"
      "vectors. Ids 1, 2, 3 as 'dog bites man' and 'man bites dog':");
  RUN(tt::manual_seed(4));
  RUN(tt::nn::Embedding words(10, 4));
  RUN(tt::Tensor dog_bites_man = tt::tensor({1, 2, 3}), man_bites_dog = tt::tensor({3, 2, 1}));
  SHOW(words(dog_bites_man).mean({0}));
  SHOW(words(man_bites_dog).mean({0}));
  say("Identical, and so is any symmetric combination of any per-token function, such as the mean\n"
      "of tanh of each vector:");
  SHOW(words(dog_bites_man).tanh().mean({0}));
  SHOW(words(man_bites_dog).tanh().mean({0}));
  say("The per-token vectors are the same rows in another order: nothing in them says where a\n"
      "token stands. The model must be told the position, either by adding a vector that depends\n"
      "on it (sections 7 and 8) or by rotating the queries and keys of attention (section 9).");
}

// -----------------------------------------------------------------------------------------------

void step_7_learned() {
  tt::manual_seed(4);  // step 6's words, which leave the random stream where step 6 does
  tt::nn::Embedding words(10, 4);
  const tt::Tensor dog_bites_man = tt::tensor({1, 2, 3}), man_bites_dog = tt::tensor({3, 2, 1});
  say("GPT-2's answer: a second table, one trained row per position, added to the token vectors.\n"
      "LearnedPositionalEmbedding(max_len, E)(T) returns rows 0 .. T-1, a [T, E] slice that\n"
      "broadcasts over the batch.");
  RUN(tt::nn::LearnedPositionalEmbedding wpe(8, 4));
  SHOW(wpe);
  RUN(auto encode = [&](const tt::Tensor& s) { return words(s) + wpe(s.size(0)); });
  say("'dog' (id 1) now has a different vector at position 0 than at position 2:");
  SHOW(encode(dog_bites_man).select(0, 0));
  SHOW(encode(man_bites_dog).select(0, 2));
  say("and a nonlinear summary tells the sentences apart:");
  SHOW(encode(dog_bites_man).tanh().mean({0}));
  SHOW(encode(man_bites_dog).tanh().mean({0}));
  say("(The plain mean would still agree: the mean of word + position is the mean of the words\n"
      "plus the mean of the positions, both order-blind. Position must interact with content\n"
      "through something nonlinear, as attention's softmax of products does.)");
  say("Only the positions used get a gradient, as for tokens:");
  RUN(encode(dog_bites_man).sum().backward());
  SHOW(wpe.weight.grad().sum({1}));
  say("The table has max_len rows, and a position past them has no vector at all. A model trained\n"
      "on sequences of 8 cannot read a ninth token:");
  SHOW_ERROR(wpe(9));
  say("With a KV cache (module 13) the positions of new tokens start where the cache ends: wpe(T,\n"
      "offset) returns rows offset .. offset + T - 1.");
  SHOW(max_abs(wpe(2, 5) - wpe.weight.slice(0, 5, 7)));
}

// -----------------------------------------------------------------------------------------------

void step_8_sinusoidal() {
  tt::manual_seed(4);  // step 6's words
  tt::nn::Embedding words(10, 4);
  const tt::Tensor dog_bites_man = tt::tensor({1, 2, 3});
  say("Attention Is All You Need added a fixed table instead, nothing to train:\n"
      "    pe[t, 2i] = sin(t w_i),   pe[t, 2i + 1] = cos(t w_i),   w_i = 10000^(-2i / E).\n"
      "Each column pair is a clock at its own frequency, from w_0 = 1 radian per position (a\n"
      "wavelength of 2 pi = 6.3 positions) down to 1/10000 (63,000 positions). For E = 8 the\n"
      "frequencies are 1, 0.1, 0.01, 0.001; positions 0 to 5, columns (sin, cos) per pair:");
  RUN(tt::Tensor pe = tt::nn::sinusoidal_positions(64, 8));
  for (int64_t t = 0; t < 6; ++t) std::cout << "    t = " << t << "  " << row3(pe.select(0, t)) << "\n";
  say("The fast pairs tell neighbours apart; the slow ones change little over a sentence but keep\n"
      "counting over thousands. Every row has the same norm, sqrt(E / 2) = 2, since each pair is\n"
      "(sin, cos) of one angle:");
  SHOW(pe.select(0, 0).pow(2.0).sum().sqrt().item<double>());
  SHOW(pe.select(0, 37).pow(2.0).sum().sqrt().item<double>());
  say("The point of sin and cos: moving k positions turns each pair by the angle k w_i, a rotation\n"
      "that does not depend on t. So the dot product of two rows is sum_i cos(k w_i): a function of\n"
      "the distance k alone. Rows k = 3 apart, at several t:");
  for (int64_t t : {0, 10, 25, 60}) {
    const std::string label = "pe[" + std::to_string(t) + "] . pe[" + std::to_string(t + 3) + "]";
    std::cout << "    " << label << std::string(18 - label.size(), ' ') << fmt("%10.6f", dot_of(pe.select(0, t), pe.select(0, t + 3))) << "\n";
  }
  {
    double expect = 0;
    for (int i = 0; i < 4; ++i) expect += std::cos(3.0 * std::pow(10000.0, -2.0 * i / 8.0));
    std::cout << "    sum_i cos(3 w_i)  " << fmt("%10.6f", expect) << "\n";
  }
  say("(The table is float32, hence the last digits.) SinusoidalPositionalEncoding keeps the table\n"
      "as a buffer, saved with the model and never trained, and adds it to its input:");
  RUN(tt::nn::SinusoidalPositionalEncoding sinus(64, 4));
  SHOW(sinus);
  SHOW(sinus.parameters().size());
  SHOW(sinus.named_buffers().keys()[0]);
  SHOW(max_abs(sinus(words(dog_bites_man)) - (words(dog_bites_man) + tt::nn::sinusoidal_positions(3, 4))));
  say("Added to the token vectors, the table mixes position into the content, and after the query\n"
      "and key projections of attention the score of two tokens still depends on where each one\n"
      "is, not only on their distance. Rotary embedding keeps only the distance.");
}

// -----------------------------------------------------------------------------------------------

void step_9_rope() {
  say("RoPE leaves the token vectors alone and, inside attention, rotates each query and key by an\n"
      "angle proportional to its position. Start with D = 2, one pair, angle t radians (theta_0 =\n"
      "1): the vector [1, 0] at position t becomes [cos t, sin t].");
  RUN(tt::nn::RotaryEmbedding rope2(tt::nn::RotaryOptions(2)));
  for (int64_t t = 0; t < 4; ++t)
    std::cout << "    t = " << t << "  " << row3(rope_at(rope2, tt::tensor({1.0, 0.0}), t)) << "   (cos " << t << ", sin "
              << t << ") = (" << fmt("%.3f", std::cos(double(t))) << ", " << fmt("%.3f", std::sin(double(t))) << ")\n";
  say("A head of D dims has D/2 pairs, pair i turning by t theta_i with theta_i = 10000^(-2i / D),\n"
      "the sinusoidal frequencies. Which coordinates form a pair is a convention; tinytorch uses\n"
      "GPT-NeoX / LLaMA (Hugging Face)'s: pair i is (x[i], x[i + D/2]), the two halves. Then\n"
      "    rope(x, t) = x * cos + rotate_half(x) * sin,   rotate_half(x) = [-x[D/2:], x[:D/2]]");
  SHOW(tt::nn::rotate_half(tt::tensor({1.0, 2.0, 3.0, 4.0})));
  RUN(tt::nn::RotaryEmbedding rope4(tt::nn::RotaryOptions(4)));
  RUN(auto [cos4, sin4] = rope4.cos_sin(3, 0, tt::kFloat32, tt::kCPU));
  SHOW(cos4);
  say("Row t holds cos(t theta_0), cos(t theta_1), then the same again for the second halves\n"
      "(theta_1 = 10000^(-1/2) = 0.01). A rotation keeps lengths, so RoPE never changes the norm\n"
      "of a query or a key:");
  RUN(tt::manual_seed(5));
  RUN(tt::nn::RotaryEmbedding rope(tt::nn::RotaryOptions(16)));
  RUN(tt::Tensor q = tt::randn({16}), k = tt::randn({16}));
  SHOW(q.pow(2.0).sum().sqrt().item<double>());
  SHOW(rope_at(rope, q, 1234).pow(2.0).sum().sqrt().item<double>());
  say("The property it exists for. Rotating q by m theta and k by n theta, the dot product sees\n"
      "only the difference: R(m)^T R(n) = R(n - m), so <rope(q, m), rope(k, n)> = <rope(q, m - n), k>.\n"
      "Attention scores of q at m and k at n, in float32, for pairs two positions apart:");
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{2, 0}, {5, 3}, {12, 10}, {100, 98}, {1000, 998}}) {
    std::cout << "    m = " << fmt("%4.0f", double(m)) << ", n = " << fmt("%4.0f", double(n))
              << "   score " << fmt("%10.6f", dot_of(rope_at(rope, q, m), rope_at(rope, k, n))) << "\n";
  }
  std::cout << "    <rope(q, m - n), k>  score " << fmt("%10.6f", dot_of(rope_at(rope, q, 2), k))
            << "   (rotate q alone by the distance, 2)\n";
  say("The same number at every absolute position (up to float32 rounding of large angles). Other\n"
      "distances give other scores, and at equal positions the rotations cancel:");
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {3, 0}, {7, 7}}) {
    std::cout << "    m = " << fmt("%4.0f", double(m)) << ", n = " << fmt("%4.0f", double(n))
              << "   score " << fmt("%10.6f", dot_of(rope_at(rope, q, m), rope_at(rope, k, n))) << "\n";
  }
  SHOW(dot_of(q, k));
  say("Compare additive positions: adding the sinusoidal rows to q and k (a stand-in for adding\n"
      "them to the tokens before the projections), the score for the same distance 2 changes with\n"
      "the absolute position:");
  RUN(tt::Tensor pe16 = tt::nn::sinusoidal_positions(1024, 16));
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{2, 0}, {5, 3}, {12, 10}, {100, 98}}) {
    std::cout << "    m = " << fmt("%4.0f", double(m)) << ", n = " << fmt("%4.0f", double(n)) << "   score "
              << fmt("%10.6f", dot_of(q + pe16.select(0, m), k + pe16.select(0, n))) << "\n";
  }
  say("Decoding with a KV cache (module 13) rotates one new token at a time: with offset = its\n"
      "position, it gets exactly the rotation of that row of the full sequence. x is [B, H, T, D]:");
  RUN(tt::Tensor x = tt::randn({1, 2, 6, 16}));
  RUN(tt::Tensor full = rope.apply(x));
  SHOW(max_abs(rope.apply(x.slice(2, 4, 5), /*offset=*/4) - full.slice(2, 4, 5)));
  say("RoPE has no parameters and no table in the state dict: its cos/sin tables are a function of\n"
      "(D, base), built on demand and grown as positions grow. So, unlike a learned table, it has\n"
      "no max_len; whether a model trained on 2,048 positions works at 8,192 is another matter\n"
      "(the README's section 9).");
  SHOW(rope.parameters().size());
  SHOW(rope.state_dict().size());
  SHOW_ERROR(tt::nn::RotaryEmbedding(tt::nn::RotaryOptions(7)));
}

// -----------------------------------------------------------------------------------------------

void step_10_costs() {
  say("GPT-2 small: V = 50257 tokens, E = 768. Its token table has V E = 38.6 M parameters, 31% of\n"
      "the model's 124 M, and 154 MB in float32; its gradient is as many bytes again, and Adam's two\n"
      "moments twice that. A batch of B T = 8 x 1024 tokens reads only 8192 rows (25 MB).\n"
      "Timed, best of 3, for those 8192 ids: the forward, the backward, and (inside the backward)\n"
      "making the zero [V, E] gradient the rows are added into; with the full table and with a table\n"
      "of 1,000 rows of the same E:");
  {
    const int64_t E = 768, N = 8192;
    tt::manual_seed(6);
    for (int64_t V : {int64_t(50257), int64_t(1000)}) {
      tt::Tensor table = tt::randn({V, E}).requires_grad_();
      tt::Tensor toks = tt::randint(V, {8, 1024});
      tt::Tensor g = tt::randn({8, 1024, E});
      double fwd = best_ms([&] {
        tt::NoGradGuard no_grad;
        (void)tt::embedding(table, toks);
      }, 3);
      double both = best_ms([&] {
        tt::embedding(table, toks).backward(g);
        table.set_grad(tt::Tensor());
      }, 3);
      double zero = best_ms([&] { (void)tt::zeros({V, E}); }, 3);
      std::cout << "    V = " << fmt("%5.0f", double(V)) << ":  forward " << fmt("%6.1f", fwd) << " ms   backward "
                << fmt("%6.1f", both - fwd) << " ms   zero [V, E] gradient " << fmt("%5.2f", zero) << " ms ("
                << fmt("%5.1f", V * E * 4 / 1e6) << " MB)\n";
    }
    std::cout << "    (N E = " << fmt("%.1f", N * E * 4 / 1e6)
              << " MB of rows gathered forward, and as many added back; " << best_of(3) << ")\n";
  }
  say("The forward is a row copy (index_select moves whole rows): 25 MB in a few ms, whatever V.\n"
      "The backward moves the same rows back and costs far more. Part of it grows with V: the\n"
      "[V, E] gradient is made as zeros and copied once more (scatter_add is out of place), 154 MB\n"
      "written twice for a tensor that is almost all zeros; that is the gap between the two rows.\n"
      "The rest is the scatter-add itself: one vectorized add of each upstream row into its table\n"
      "row, in order, on one thread (two threads could race on a repeated id). (PyTorch's\n"
      "sparse=True gradient skips the dense [V, E] tensor\n"
      "entirely, at the price of optimizers that handle sparse tensors; tinytorch keeps gradients\n"
      "dense.)\n"
      "\n"
      "RoPE has no parameters; it costs a few elementwise passes over q and k (two multiplies, an\n"
      "add, the rotate_half copy) and cos/sin tables of T x D numbers each, shared by every head.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_10";
  w.begin = [] {
    std::cout << "Module 10 - embeddings: token ids to vectors (a gather forward, a scatter-add backward),\n"
                 "padding_idx, one-hot equivalence, and positions: learned, sinusoidal and rotary (RoPE).\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "A lookup table", step_1_lookup},
      {"2", "The same numbers as one-hot @ W", step_2_one_hot},
      {"3", "The backward: a scatter-add, and repeated ids add up", step_3_backward},
      {"4", "padding_idx", step_4_padding_idx},
      {"5", "What the lookup refuses", step_5_refused},
      {"6", "Order: a bag of vectors cannot see it", step_6_order},
      {"7", "Learned positions", step_7_learned},
      {"8", "The sinusoidal table", step_8_sinusoidal},
      {"9", "Rotary embedding (RoPE)", step_9_rope},
      {"10", "What a vocabulary costs", step_10_costs},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/11_normalization, which keeps the scale of\n"
                 "these vectors in check as they pass through a deep stack.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


