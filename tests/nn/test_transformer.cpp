// nn::TransformerBlock and nn::GPT (nn/transformer.h): shapes, parameter names and tying, init,
// causality, KV-cache decoding against full recomputation (MHA, GQA, MQA, qk_norm), generation
// (greedy, top-k, seeds, sliding window, mode restore), gradients, a tiny overfit, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;

namespace {

// A small model: every test here runs in milliseconds.
nn::GPTOptions tiny(int64_t vocab = 11, int64_t ctx = 8) {
  return nn::GPTOptions(vocab, ctx).n_layer(2).n_embd(16).n_head(2);
}

std::vector<int64_t> tokens(const Tensor& t) { return t.to_vector<int64_t>(); }

// Logits [B, V] of the last position of forward(ids), the model's view of what comes next.
Tensor last_logits(const nn::GPT& gpt, const Tensor& ids) {
  Tensor logits = gpt(ids);
  return logits.select(1, logits.size(1) - 1);
}

// Greedy decoding by hand: argmax of forward() on the last context_length tokens, step by step.
Tensor greedy_by_hand(const nn::GPT& gpt, Tensor seq, int64_t n) {
  NoGradGuard no_grad;
  int64_t ctx = gpt.options.context_length();
  for (int64_t i = 0; i < n; ++i) {
    int64_t L = seq.size(1);
    Tensor window = L <= ctx ? seq : seq.slice(1, L - ctx, L);
    seq = cat({seq, last_logits(gpt, window).argmax(-1, true)}, 1);
  }
  return seq;
}

int64_t expected_block_params(int64_t E, int64_t H, int64_t Hkv, int64_t ratio, bool bias) {
  int64_t D = E / H, b = bias ? 1 : 0;
  int64_t norms = 2 * (E + b * E);
  int64_t attn = (E * E + b * E) + 2 * (E * Hkv * D + b * Hkv * D) + (E * E + b * E);
  int64_t mlp = (E * ratio * E + b * ratio * E) + (ratio * E * E + b * E);
  return norms + attn + mlp;
}

// Runs ids [B, T] through forward_cached in pieces (the first `prompt` tokens, then one at a
// time) and checks every piece's logits against forward() on the whole sequence.
void check_cache_matches_full(const nn::GPTOptions& options, int64_t prompt) {
  manual_seed(1400);
  nn::GPT gpt(options);
  gpt.eval();
  NoGradGuard no_grad;
  int64_t T = options.context_length();
  Tensor ids = randint(options.vocab_size(), {2, T});
  Tensor full = gpt(ids);
  std::vector<nn::KVCache> caches(size_t(options.n_layer()), nn::KVCache(T));
  Tensor first = gpt.forward_cached(ids.slice(1, 0, prompt), caches);
  CHECK(caches[0].length() == prompt);
  CHECK_ALLCLOSE(first, full.slice(1, 0, prompt), 1e-5, 1e-5);
  for (int64_t t = prompt; t < T; ++t) {
    INFO("position " << t);
    Tensor step = gpt.forward_cached(ids.slice(1, t, t + 1), caches);
    REQUIRE(step.shape() == Shape{2, 1, options.vocab_size()});
    CHECK_ALLCLOSE(step, full.slice(1, t, t + 1), 1e-5, 1e-5);
  }
  for (const nn::KVCache& c : caches) CHECK(c.length() == T);
}

}  // namespace

// --- structure -------------------------------------------------------------------------------

TEST_CASE("TransformerBlock maps [B, T, E] to [B, T, E] and records per-head attention maps", "[nn][transformer]") {
  manual_seed(1401);
  nn::TransformerBlock block(16, 4);
  CHECK(block.named_parameters().contains("attn.q_proj.weight"));
  CHECK(block.fc1->weight.shape() == Shape{64, 16});
  CHECK(block.fc2->weight.shape() == Shape{16, 64});
  Tensor x = randn({2, 5, 16});
  Tensor y = block(x);
  CHECK(y.shape() == Shape{2, 5, 16});
  CHECK_FALSE(block.last_attention().defined());

  block.record_attention(true);
  Tensor y_recorded = block(x);
  CHECK_ALLCLOSE(y_recorded, y, 1e-5, 1e-6);  // the math path gives the fused kernel's output
  Tensor w = block.last_attention();
  REQUIRE(w.shape() == Shape{2, 4, 5, 5});
  CHECK_FALSE(w.requires_grad());
  CHECK_ALLCLOSE(w.sum({-1}), ones({2, 4, 5}), 1e-5, 1e-6);  // each row is a distribution
  std::vector<float> v = w.contiguous().to_vector<float>();
  bool causal = true;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = i + 1; j < 5; ++j)
      for (int64_t bh = 0; bh < 8; ++bh) causal = causal && v[size_t(bh * 25 + i * 5 + j)] == 0.0f;
  CHECK(causal);
  block.record_attention(false);
  CHECK_FALSE(block.last_attention().defined());
}

TEST_CASE("TransformerBlock follows is_causal and attn_mask", "[nn][transformer]") {
  manual_seed(1402);
  nn::TransformerBlock block(8, 2);
  Tensor x = randn({1, 4, 8});
  // The causal flag and the equivalent bool mask (true = NOT allowed) give the same output.
  Tensor mask = tensor({false, true, true, true, false, false, true, true, false, false, false, true, false, false,
                        false, false})
                    .view({4, 4});
  CHECK_ALLCLOSE(block(x, mask, false), block(x), 1e-5, 1e-6);
  // Without the causal rule the first position sees the whole sequence: its output changes.
  Tensor bidirectional = block(x, {}, false);
  CHECK_FALSE(tt::testing::allclose(bidirectional.select(1, 0), block(x).select(1, 0), 1e-4, 1e-5));
}

TEST_CASE("TransformerBlock drops out each residual branch in training mode", "[nn][transformer]") {
  manual_seed(1420);
  nn::TransformerBlock block(8, 2, nn::TransformerBlockOptions().dropout(0.5));
  {
    NoGradGuard no_grad;  // silence the attention branch: its output is 0 whatever is dropped
    block.attn->out_proj->weight.zero_();
    block.attn->out_proj->bias.zero_();
  }
  Tensor x = randn({2, 4, 8});
  Tensor mlp = block.fc2->forward(gelu(block.fc1->forward(block.ln2->forward(x))));
  // y - x is the MLP branch with each element either dropped or scaled by 1 / (1 - p) = 2.
  std::vector<float> branch = (block(x) - x).to_vector<float>(), full = mlp.to_vector<float>();
  int64_t dropped = 0, kept = 0;
  bool each_dropped_or_doubled = true;
  for (size_t i = 0; i < branch.size(); ++i) {
    if (branch[i] == 0.0f) {
      ++dropped;
    } else {
      ++kept;
      each_dropped_or_doubled = each_dropped_or_doubled && std::fabs(branch[i] - 2.0f * full[i]) < 1e-5f;
    }
  }
  CHECK(each_dropped_or_doubled);
  CHECK(dropped > 10);
  CHECK(kept > 10);
  block.eval();
  CHECK_ALLCLOSE(block(x) - x, mlp, 1e-5, 1e-6);

  // Now silence the MLP instead: about half of the attention branch's elements are dropped
  // (the attention output itself, behind its own dropout and out_proj's bias, is almost never 0).
  block.train();
  {
    NoGradGuard no_grad;
    block.fc2->weight.zero_();
    block.fc2->bias.zero_();
    nn::init::uniform_(block.attn->out_proj->weight, -0.5, 0.5);
    nn::init::uniform_(block.attn->out_proj->bias, 0.1, 0.5);
  }
  std::vector<float> attn_branch = (block(x) - x).to_vector<float>();
  int64_t zeros_in_attn = std::count(attn_branch.begin(), attn_branch.end(), 0.0f);
  CHECK(zeros_in_attn > 16);  // of 64, half expected
  CHECK(zeros_in_attn < 48);
}

TEST_CASE("GPT maps ids [B, T] to logits [B, T, vocab]", "[nn][transformer]") {
  manual_seed(1403);
  nn::GPT gpt(tiny());
  Tensor logits = gpt(tensor({{1, 2, 3}, {4, 5, 10}}));
  CHECK(logits.shape() == Shape{2, 3, 11});
  CHECK(logits.dtype() == kFloat32);
  CHECK(gpt(randint(11, {3, 8})).shape() == Shape{3, 8, 11});
  CHECK(gpt.blocks->size() == 2);
}

TEST_CASE("GPT parameters: names, count, and the tied head", "[nn][transformer]") {
  manual_seed(1404);
  const int64_t V = 11, C = 8, E = 16;
  nn::GPT untied(tiny().tie_weights(false));
  nn::GPT tied(tiny());

  int64_t body = V * E + C * E + 2 * expected_block_params(E, 2, 2, 4, true) + 2 * E;
  CHECK(untied.num_parameters() == body + V * E);
  CHECK(tied.num_parameters() == body);
  CHECK(untied.num_parameters() - tied.num_parameters() == V * E);

  std::vector<std::string> names = untied.named_parameters().keys();
  REQUIRE(names.size() >= 4);
  CHECK(names[0] == "tok_emb.weight");
  CHECK(names[1] == "pos_emb.weight");
  CHECK(names[2] == "blocks.0.ln1.weight");
  CHECK(names.back() == "head.weight");
  std::set<std::string> set(names.begin(), names.end());
  for (const char* n : {"blocks.0.ln1.bias", "blocks.0.attn.q_proj.weight", "blocks.0.attn.k_proj.bias",
                        "blocks.0.attn.v_proj.weight", "blocks.0.attn.out_proj.weight", "blocks.0.ln2.weight",
                        "blocks.1.fc1.weight", "blocks.1.fc1.bias", "blocks.1.fc2.weight", "blocks.1.fc2.bias",
                        "ln_f.weight", "ln_f.bias"})
    CHECK(set.count(n) == 1);
  CHECK(set.count("head.bias") == 0);  // the head has no bias

  // Tied: one tensor, listed once by parameters(), saved under both names.
  CHECK(tied.head->weight.is_same(tied.tok_emb->weight));
  CHECK_FALSE(tied.named_parameters().contains("head.weight"));
  CHECK(tied.named_parameters().size() == untied.named_parameters().size() - 1);
  nn::StateDict sd = tied.state_dict();
  REQUIRE(sd.contains("head.weight"));
  CHECK(sd["head.weight"].data_ptr<float>() == sd["tok_emb.weight"].data_ptr<float>());
  CHECK(tied.head->named_parameters()["weight"].is_same(tied.tok_emb->weight));
  REQUIRE_THROWS_WITH(tied.head->replace_parameter("wieght", tied.tok_emb->weight),
                      Catch::Contains("\"wieght\" is not a parameter of Linear"));

  // bias(false): no biases anywhere (LayerNorms included).
  nn::GPT nobias(tiny().bias(false));
  for (const std::string& n : nobias.named_parameters().keys()) CHECK(n.find("bias") == std::string::npos);
  CHECK(nobias.num_parameters() == V * E + C * E + 2 * expected_block_params(E, 2, 2, 4, false) + E);

  // GQA: k_proj and v_proj shrink to num_kv_heads * head_dim outputs.
  nn::GPT gqa(tiny().n_head(4).n_kv_head(2));
  CHECK(gqa.state_dict()["blocks.0.attn.k_proj.weight"].shape() == Shape{8, 16});
  CHECK(gqa.num_parameters() == V * E + C * E + 2 * expected_block_params(E, 4, 2, 4, true) + 2 * E);
  // qk_norm adds one RMSNorm weight [D] for q and one for k per block.
  nn::GPT qk(tiny().qk_norm(true));
  CHECK(qk.num_parameters() == tied.num_parameters() + 2 * 2 * 8);
}

TEST_CASE("GPT is initialized as GPT-2", "[nn][transformer]") {
  manual_seed(1405);
  nn::GPT gpt(nn::GPTOptions(256, 16).n_layer(8).n_embd(64).n_head(4).tie_weights(false));
  auto stdev = [](const Tensor& t) { return t.detach().std().item<double>(); };
  CHECK(stdev(gpt.tok_emb->weight) == Approx(0.02).epsilon(0.05));
  CHECK(stdev(gpt.pos_emb->weight) == Approx(0.02).epsilon(0.1));
  CHECK(stdev(gpt.head->weight) == Approx(0.02).epsilon(0.05));
  auto block = gpt.blocks->ptr<nn::TransformerBlock>(3);
  CHECK(stdev(block->fc1->weight) == Approx(0.02).epsilon(0.05));
  CHECK(stdev(block->attn->q_proj->weight) == Approx(0.02).epsilon(0.05));
  double residual = 0.02 / std::sqrt(2.0 * 8);
  CHECK(stdev(block->fc2->weight) == Approx(residual).epsilon(0.05));
  CHECK(stdev(block->attn->out_proj->weight) == Approx(residual).epsilon(0.05));
  CHECK(block->fc1->bias.detach().abs().max().item<double>() == 0.0);
  CHECK(block->attn->out_proj->bias.detach().abs().max().item<double>() == 0.0);
  CHECK_ALLCLOSE(block->ln1->weight.detach(), ones({64}), 0, 0);
  // Small weights: the untrained model is close to uniform over the vocabulary.
  Tensor logits = gpt(randint(256, {2, 16}));
  CHECK(logits.detach().abs().max().item<double>() < 1.5);
}

// --- computation -----------------------------------------------------------------------------

TEST_CASE("GPT is causal: a later token does not change earlier logits", "[nn][transformer]") {
  manual_seed(1406);
  nn::GPT gpt(tiny());
  gpt.eval();
  Tensor ids = tensor({{1, 2, 3, 4, 5, 6, 7}});
  Tensor changed = tensor({{1, 2, 3, 4, 9, 6, 7}});
  Tensor a = gpt(ids), b = gpt(changed);
  CHECK_ALLCLOSE(b.slice(1, 0, 4), a.slice(1, 0, 4), 1e-6, 1e-7);
  for (int64_t t = 4; t < 7; ++t) {
    INFO("position " << t);
    CHECK_FALSE(tt::testing::allclose(b.select(1, t), a.select(1, t), 1e-4, 1e-5));
  }
}

TEST_CASE("KV-cache decoding gives the logits of the whole sequence", "[nn][transformer]") {
  SECTION("multi-head attention, prompt of 3") { check_cache_matches_full(tiny(), 3); }
  SECTION("one token at a time from the start") { check_cache_matches_full(tiny(), 1); }
  SECTION("grouped-query attention") { check_cache_matches_full(tiny().n_head(4).n_kv_head(2), 3); }
  SECTION("multi-query attention") { check_cache_matches_full(tiny().n_head(4).n_kv_head(1), 2); }
  SECTION("qk_norm, no bias, untied") {
    check_cache_matches_full(tiny().qk_norm(true).bias(false).tie_weights(false), 4);
  }
  SECTION("qk_norm with GQA") { check_cache_matches_full(tiny().n_head(4).n_kv_head(2).qk_norm(true), 5); }
}

TEST_CASE("forward_cached takes chunks and runs without grad", "[nn][transformer]") {
  manual_seed(1407);
  nn::GPT gpt(tiny());
  gpt.eval();
  Tensor ids = randint(11, {1, 8});
  Tensor full = gpt(ids);
  CHECK(full.requires_grad());
  std::vector<nn::KVCache> caches(2, nn::KVCache(8));
  Tensor a = gpt.forward_cached(ids.slice(1, 0, 3), caches);
  Tensor b = gpt.forward_cached(ids.slice(1, 3, 7), caches);  // four new tokens, causal among themselves
  CHECK_FALSE(a.requires_grad());
  CHECK(GradMode::is_enabled());
  CHECK_ALLCLOSE(b, full.slice(1, 3, 7), 1e-5, 1e-5);
  CHECK(caches[1].length() == 7);
  REQUIRE_THROWS_WITH(gpt.forward_cached(ids.slice(1, 0, 2), caches),
                      Catch::Contains("positions 7 .. 8 exceed context_length 8"));
  CHECK(caches[0].length() == 7);  // the failed call changed nothing
  // A later block's cache too small: refused before block 0 appends anything.
  std::vector<nn::KVCache> uneven{nn::KVCache(8), nn::KVCache(2)};
  REQUIRE_THROWS_WITH(gpt.forward_cached(ids.slice(1, 0, 3), uneven),
                      Catch::Contains("block 1's cache holds at most 2"));
  CHECK(uneven[0].length() == 0);
}

// --- generation ------------------------------------------------------------------------------

TEST_CASE("generate: greedy with and without the cache agree with decoding by hand", "[nn][transformer]") {
  manual_seed(1408);
  nn::GPT gpt(tiny().n_head(4).n_kv_head(2));
  Tensor prompt = tensor({{1, 2, 3}, {7, 7, 0}});
  Tensor cached = gpt.generate(prompt, 4, nn::GenerateOptions().greedy(true));
  Tensor recomputed = gpt.generate(prompt, 4, nn::GenerateOptions().greedy(true).use_cache(false));
  REQUIRE(cached.shape() == Shape{2, 7});
  CHECK(tokens(cached.slice(1, 0, 3)) == tokens(prompt));
  CHECK(tokens(cached) == tokens(recomputed));
  CHECK(tokens(cached) == tokens(greedy_by_hand(gpt, prompt, 4)));
  CHECK(tokens(gpt.generate(prompt, 0)) == tokens(prompt));
}

TEST_CASE("generate: top_k = 1 is greedy, and top_k keeps to the k most likely tokens", "[nn][transformer]") {
  manual_seed(1409);
  nn::GPT gpt(tiny());
  Tensor prompt = tensor({{3, 1, 4}, {1, 5, 9}});
  Tensor greedy = gpt.generate(prompt, 5, nn::GenerateOptions().greedy(true));
  CHECK(tokens(gpt.generate(prompt, 5, nn::GenerateOptions().top_k(1))) == tokens(greedy));
  CHECK(tokens(gpt.generate(prompt, 5, nn::GenerateOptions().top_k(1).temperature(5.0))) == tokens(greedy));

  // 64 copies of one prompt: every first sample is among the 3 largest logits, and not always
  // the same one.
  Tensor many = tensor({{3, 1, 4}}).expand({64, 3}).contiguous();
  Tensor logits;
  {
    NoGradGuard no_grad;
    gpt.eval();
    logits = last_logits(gpt, tensor({{3, 1, 4}})).select(0, 0);
  }
  std::vector<float> l = logits.to_vector<float>();
  std::vector<int64_t> order = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return l[size_t(i)] > l[size_t(j)]; });
  std::set<int64_t> top3(order.begin(), order.begin() + 3), seen;
  Generator g(14);
  Tensor out = gpt.generate(many, 1, nn::GenerateOptions().top_k(3).generator(&g));
  for (int64_t b = 0; b < 64; ++b) seen.insert(out[b][3].item<int64_t>());
  for (int64_t t : seen) CHECK(top3.count(t) == 1);
  CHECK(seen.size() > 1);
}

TEST_CASE("generate: temperature sharpens or flattens the distribution", "[nn][transformer]") {
  manual_seed(1419);
  nn::GPT gpt(tiny());
  Tensor many = tensor({{2, 7, 1}}).expand({64, 3}).contiguous();
  Tensor greedy = gpt.generate(many, 1, nn::GenerateOptions().greedy(true));
  // Near zero: every row takes the argmax.
  Generator g1(21), g2(22);
  Tensor cold = gpt.generate(many, 1, nn::GenerateOptions().temperature(1e-6).generator(&g1));
  CHECK(tokens(cold) == tokens(greedy));
  // Very hot: close to uniform over the 11 tokens, so many different first samples.
  Tensor hot = gpt.generate(many, 1, nn::GenerateOptions().temperature(100.0).generator(&g2));
  std::set<int64_t> seen;
  for (int64_t b = 0; b < 64; ++b) seen.insert(hot[b][3].item<int64_t>());
  CHECK(seen.size() >= 8);
}

TEST_CASE("generate: the same seed gives the same samples", "[nn][transformer]") {
  manual_seed(1410);
  nn::GPT gpt(tiny());
  Tensor prompt = tensor({{1, 2}, {3, 4}});
  Generator g1(99), g2(99), g3(100);
  auto opts = [](Generator* g) { return nn::GenerateOptions().temperature(1.5).generator(g); };
  Tensor a = gpt.generate(prompt, 10, opts(&g1));
  Tensor b = gpt.generate(prompt, 10, opts(&g2));
  Tensor c = gpt.generate(prompt, 10, opts(&g3));
  CHECK(tokens(a) == tokens(b));
  CHECK(tokens(a) != tokens(c));
  // The global generator, through tt::manual_seed; the cache does not change the samples.
  manual_seed(5);
  Tensor d = gpt.generate(prompt, 10);
  manual_seed(5);
  Tensor e = gpt.generate(prompt, 10, nn::GenerateOptions().use_cache(false));
  CHECK(tokens(d) == tokens(e));
  for (int64_t t : tokens(d)) CHECK((t >= 0 && t < 11));
}

TEST_CASE("generate slides the window past context_length", "[nn][transformer]") {
  manual_seed(1411);
  nn::GPT gpt(tiny(11, 6));
  SECTION("a short prompt that outgrows the context") {
    Tensor prompt = tensor({{1, 2, 3, 4}});
    Tensor cached = gpt.generate(prompt, 9, nn::GenerateOptions().greedy(true));
    CHECK(cached.shape() == Shape{1, 13});
    CHECK(tokens(cached) == tokens(gpt.generate(prompt, 9, nn::GenerateOptions().greedy(true).use_cache(false))));
    CHECK(tokens(cached) == tokens(greedy_by_hand(gpt, prompt, 9)));
  }
  SECTION("a prompt longer than the context") {
    Tensor prompt = tensor({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {0, 0, 0, 0, 0, 1, 1, 1, 1, 1}});
    Tensor cached = gpt.generate(prompt, 3, nn::GenerateOptions().greedy(true));
    CHECK(cached.shape() == Shape{2, 13});
    CHECK(tokens(cached) == tokens(greedy_by_hand(gpt, prompt, 3)));
  }
  SECTION("sampling with a seed, with and without the cache") {
    Generator g1(3), g2(3);
    Tensor prompt = tensor({{5, 4}});
    Tensor a = gpt.generate(prompt, 12, nn::GenerateOptions().top_k(4).generator(&g1));
    Tensor b = gpt.generate(prompt, 12, nn::GenerateOptions().top_k(4).generator(&g2).use_cache(false));
    CHECK(tokens(a) == tokens(b));
  }
}

TEST_CASE("generate runs with eval behaviour and without grad and leaves the modes as they were, also on errors",
          "[nn][transformer]") {
  manual_seed(1412);
  nn::GPT gpt(tiny().dropout(0.5));
  Tensor prompt = tensor({{1, 2, 3}});
  // Dropout is off inside: greedy decoding is repeatable although the model is training.
  CHECK(gpt.is_training());
  Tensor a = gpt.generate(prompt, 6, nn::GenerateOptions().greedy(true));
  Tensor b = gpt.generate(prompt, 6, nn::GenerateOptions().greedy(true));
  CHECK(tokens(a) == tokens(b));
  CHECK(gpt.is_training());
  CHECK(gpt.drop->is_training());
  CHECK(GradMode::is_enabled());

  // Mixed modes come back as they were.
  gpt.blocks->ptr<nn::TransformerBlock>(0)->eval();
  gpt.generate(prompt, 2);
  CHECK(gpt.is_training());
  CHECK_FALSE(gpt.blocks->ptr<nn::TransformerBlock>(0)->is_training());
  CHECK_FALSE(gpt.blocks->ptr<nn::TransformerBlock>(0)->drop->is_training());
  CHECK(gpt.blocks->ptr<nn::TransformerBlock>(1)->drop->is_training());

  // A token id outside the vocabulary fails inside the forward: the modes are still as they were.
  REQUIRE_THROWS(gpt.generate(tensor({{1, 11}}), 2));
  CHECK(gpt.is_training());
  CHECK(gpt.blocks->ptr<nn::TransformerBlock>(1)->is_training());
  CHECK(GradMode::is_enabled());
}

TEST_CASE("Dropout in GPT is active in training mode only", "[nn][transformer]") {
  manual_seed(1413);
  nn::GPT gpt(tiny().dropout(0.3));
  Tensor ids = randint(11, {2, 6});
  CHECK_FALSE(tt::testing::allclose(gpt(ids), gpt(ids), 1e-5, 1e-6));
  gpt.eval();
  CHECK_ALLCLOSE(gpt(ids), gpt(ids), 0, 0);
}

// --- training --------------------------------------------------------------------------------

TEST_CASE("Every GPT parameter gets a gradient from the language-model loss", "[nn][transformer]") {
  for (bool tie : {true, false}) {
    INFO("tie_weights " << tie);
    manual_seed(1414);
    nn::GPT gpt(tiny().qk_norm(true).n_head(4).n_kv_head(2).tie_weights(tie));
    Tensor ids = tensor({{1, 2, 3, 4, 5}, {6, 7, 8, 9, 0}});
    Tensor targets = tensor({{2, 3, 4, 5, 6}, {7, 8, 9, 0, 1}});
    Tensor loss = F::cross_entropy(gpt(ids).reshape({-1, 11}), targets.reshape({-1}));
    loss.backward();
    for (const auto& [name, p] : gpt.named_parameters()) {
      INFO(name);
      REQUIRE(p.grad().defined());
      CHECK(p.grad().abs().sum().item<double>() > 0);
    }
    // Token 10 is in no input: its embedding row gets gradient only through the tied head.
    double row10 = gpt.tok_emb->weight.grad().select(0, 10).abs().sum().item<double>();
    CHECK((tie ? row10 > 0 : row10 == 0));
  }
}

TEST_CASE("GPT gradients match finite differences in float64", "[nn][transformer]") {
  manual_seed(1415);
  nn::GPT gpt(nn::GPTOptions(7, 5).n_layer(1).n_embd(8).n_head(2).qk_norm(true));
  gpt.to(kFloat64);
  Tensor ids = tensor({{1, 2, 3, 4}, {6, 5, 0, 2}});
  Tensor targets = tensor({{2, 3, 4, 5}, {5, 0, 2, 1}});
  auto loss_of = [&] { return F::cross_entropy(gpt(ids).reshape({-1, 7}), targets.reshape({-1})); };
  loss_of().backward();
  nn::StateDict params = gpt.named_parameters();
  for (const char* name : {"tok_emb.weight", "pos_emb.weight", "blocks.0.attn.q_proj.weight",
                           "blocks.0.attn.k_proj.weight", "blocks.0.attn.v_proj.bias", "blocks.0.attn.q_norm.weight",
                           "blocks.0.ln1.weight", "blocks.0.fc1.weight", "blocks.0.fc2.bias", "ln_f.bias"}) {
    INFO(name);
    REQUIRE(params.contains(name));
    Tensor p = params[name];
    Tensor flat = p.detach().reshape({-1});
    for (int64_t i : {int64_t(0), flat.numel() / 2 + 1}) {
      double analytic = p.grad().reshape({-1})[i].item<double>();
      double eps = 1e-6, saved = flat[i].item<double>();
      NoGradGuard no_grad;
      flat[i].fill_(saved + eps);
      double up = loss_of().item<double>();
      flat[i].fill_(saved - eps);
      double down = loss_of().item<double>();
      flat[i].fill_(saved);
      CHECK(analytic == Approx((up - down) / (2 * eps)).margin(1e-7).epsilon(1e-4));
    }
  }
}

TEST_CASE("A tiny GPT overfits one batch with AdamW", "[nn][transformer]") {
  manual_seed(1416);
  nn::GPT gpt(nn::GPTOptions(16, 8).n_layer(2).n_embd(32).n_head(4));
  Tensor batch = randint(16, {4, 9});
  Tensor ids = batch.slice(1, 0, 8), targets = batch.slice(1, 1, 9).contiguous();
  optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.0));
  auto loss_of = [&] { return F::cross_entropy(gpt(ids).reshape({-1, 16}), targets.reshape({-1})); };
  double first = loss_of().item<double>();
  CHECK(first == Approx(std::log(16.0)).margin(0.1));  // near uniform at init
  double last = first;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    Tensor loss = loss_of();
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.3 * first);
  // Greedy generation now reproduces the memorized continuation of the first row.
  Tensor out = gpt.generate(ids.slice(0, 0, 1).slice(1, 0, 4), 4, nn::GenerateOptions().greedy(true));
  CHECK(tokens(out.slice(1, 4, 8)) == tokens(batch.slice(0, 0, 1).slice(1, 4, 8)));
}

TEST_CASE("A tied GPT round-trips through its state dict", "[nn][transformer]") {
  manual_seed(1417);
  nn::GPT a(tiny()), b(tiny());
  b.load_state_dict(a.state_dict());
  CHECK(b.head->weight.is_same(b.tok_emb->weight));
  Tensor ids = randint(11, {1, 5});
  a.eval();
  b.eval();
  CHECK_ALLCLOSE(b(ids), a(ids), 0, 0);
}

// --- errors ----------------------------------------------------------------------------------

TEST_CASE("GPT::generate refuses non-finite logits, greedy as well as sampled", "[nn][transformer]") {
  // A diverged model: argmax over a row of NaN would answer token 0 as if it meant it.
  manual_seed(7);
  nn::GPT gpt(tiny());
  {
    NoGradGuard no_grad;
    for (Tensor w : gpt.parameters()) w.fill_(std::numeric_limits<double>::quiet_NaN());
  }
  const Tensor p = tensor({{1, 2}, {3, 4}});
  REQUIRE_THROWS_WITH(gpt.generate(p, 2, nn::GenerateOptions().greedy(true)),
                      "nn::GPT::generate: the logits are not finite (nan for token 0 in row 0); the model has diverged");
  REQUIRE_THROWS_WITH(gpt.generate(p, 2), Catch::Contains("the logits are not finite (nan for token 0 in row 0)"));
  REQUIRE_THROWS_WITH(gpt.generate(p, 2, nn::GenerateOptions().top_k(3)), Catch::Contains("not finite"));
}


TEST_CASE("GPT and TransformerBlock reject bad input with clear errors", "[nn][transformer]") {
  manual_seed(1418);
  nn::GPT gpt(tiny());
  REQUIRE_THROWS_WITH(gpt(randint(11, {1, 9})), Catch::Contains("sequence length 9 exceeds context_length 8"));
  REQUIRE_THROWS_AS(gpt(randint(11, {1, 9})), ShapeError);
  REQUIRE_THROWS_WITH(gpt(tensor({1, 2, 3})), Catch::Contains("ids must be [B, T]"));
  REQUIRE_THROWS_WITH(gpt(tensor({{1.0, 2.0}})), Catch::Contains("ids must be int64"));
  REQUIRE_THROWS_WITH(gpt(Tensor()), Catch::Contains("undefined"));

  Tensor p = tensor({{1, 2}});
  REQUIRE_THROWS_WITH(gpt.generate(p, 3, nn::GenerateOptions().temperature(0.0)),
                      Catch::Contains("temperature must be a finite number > 0, got 0"));
  REQUIRE_THROWS_WITH(gpt.generate(p, 3, nn::GenerateOptions().temperature(-1.0).greedy(true)),
                      Catch::Contains("temperature"));
  REQUIRE_THROWS_WITH(gpt.generate(p, 3, nn::GenerateOptions().top_k(-2)),
                      Catch::Contains("top_k must be >= 0 (0 = all tokens), got -2"));
  REQUIRE_THROWS_WITH(gpt.generate(p, -1), Catch::Contains("max_new_tokens must be >= 0, got -1"));
  REQUIRE_THROWS_WITH(gpt.generate(tensor({{1.0, 2.0}}), 1), Catch::Contains("int64"));
  CHECK(gpt.is_training());

  std::vector<nn::KVCache> one(1, nn::KVCache(8));
  REQUIRE_THROWS_WITH(gpt.forward_cached(p, one), Catch::Contains("one KVCache per block (2), got 1"));

  REQUIRE_THROWS_WITH(nn::GPT(tiny().n_embd(18).n_head(4)),
                      Catch::Contains("n_embd must be divisible by n_head, got 18 and 4"));
  REQUIRE_THROWS_WITH(nn::GPT(nn::GPTOptions(0, 8)), Catch::Contains("vocab_size and context_length must be > 0"));
  REQUIRE_THROWS_WITH(nn::GPT(tiny().n_layer(0)), Catch::Contains("n_layer, n_embd and n_head must be > 0"));
  REQUIRE_THROWS_WITH(nn::GPT(tiny().dropout(1.0)), Catch::Contains("dropout must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(nn::TransformerBlock(16, 4, nn::TransformerBlockOptions().mlp_ratio(0)),
                      Catch::Contains("mlp_ratio must be > 0, got 0"));
  nn::TransformerBlock block(16, 4);
  REQUIRE_THROWS_WITH(block(randn({2, 5, 8})), Catch::Contains("expected input [B, T, 16], got [2, 5, 8]"));
}
