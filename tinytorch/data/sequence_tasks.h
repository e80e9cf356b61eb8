// Synthetic sequence tasks that only attention solves: a row of L digits, a separator, and then
// the digits reversed, sorted or copied. Each answer token depends on a digit at a position that
// moves with the row, so a model must look back and find it; the examples (train_gpt_task) and
// module 14 train a tiny GPT on them. Left out: variable lengths, padding, arithmetic tasks.
//
//   tt::data::SequenceTask task = tt::data::make_sequence_task(tt::data::SequenceTaskKind::kReverse, 8, 0);
//   tt::data::SequenceBatch b = task.sample(64);           // b.input, b.target: int64 [64, 16]
//   Tensor logits = gpt(b.input);                           // [64, 16, V], V = task.vocab_size()
//   Tensor loss = F::cross_entropy(logits.reshape({-1, V}), b.target.reshape({-1}));  // -100 skipped
//   task.decode(b.prompt.select(0, 0))                       // "31415926>"
//
// Note [sequence layout]: for L = 4 and the reverse task,
//   sequence  3 1 4 1 > 1 4 1 3     the prompt (L digits and '>') then the answer (L digits)
//   input     3 1 4 1 > 1 4 1       the sequence without its last token, [B, 2L]
//   target    . . . . 1 4 1 3       the next token where it is scored, -100 (".") elsewhere
// A causal language model reads input and predicts target at every position; only the answer is
// scored, because the prompt's digits are random and cannot be predicted. Under teacher forcing
// the answer positions see the true earlier answer tokens; an answer is nonetheless all right
// under teacher forcing exactly when greedy decoding gets it all right (the two runs see the same
// tokens until the first mistake), so exact-sequence accuracy from one batched forward equals that
// of generating token by token.
//
// Note [held-out split]: every digit row belongs to one split, fixed by a hash of its digits (not
// of the seed): about one row in eight is a test row. sample() draws only train rows and
// held_out() only test rows, so held-out accuracy is measured on rows never trained on.
// Everything is drawn from Philox streams of the seed (data/random.h): the same seed gives the
// same batches on every platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinytorch/core/tensor.h"
#include "tinytorch/data/random.h"

namespace tt::data {

enum class SequenceTaskKind {
  kReverse,  // answer = the digits in reverse order:   3141 > 1413
  kSort,     // answer = the digits in ascending order: 3141 > 1134
  kCopy,     // answer = the digits again:              3141 > 3141
};

// "reverse", "sort", "copy".
std::string to_string(SequenceTaskKind kind);
// The kind named `name` (as to_string spells it); tt::Error listing the names otherwise.
SequenceTaskKind sequence_task_kind(const std::string& name);

// One batch of examples; every tensor is int64 on the CPU (see Note [sequence layout]).
struct SequenceBatch {
  Tensor input;   // [B, 2L] token ids: the sequence without its last token
  Tensor target;  // [B, 2L] the next token at the answer positions (L .. 2L-1), -100 before
  Tensor prompt;  // [B, L + 1] the digits and the separator: what generation starts from
  Tensor answer;  // [B, L] the correct answer
};

class SequenceTask {
 public:
  // length: L digits per row, >= 1. num_symbols: digits 0 .. num_symbols-1 are used, 2..10.
  // Throws tt::Error for values outside these ranges, and when the rows are so few (num_symbols^L)
  // that one split would be empty.
  SequenceTask(SequenceTaskKind kind, int64_t length, uint64_t seed, int64_t num_symbols = 10);

  SequenceTaskKind kind() const { return kind_; }
  int64_t length() const { return length_; }                // L
  int64_t num_symbols() const { return num_symbols_; }
  int64_t prompt_length() const { return length_ + 1; }     // L + 1
  int64_t answer_length() const { return length_; }         // L
  int64_t sequence_length() const { return 2 * length_; }   // T of input and target: 2L
  // Tokens: ids 0 .. num_symbols-1 are the digits "0", "1", ...; then the separator ">".
  int64_t vocab_size() const { return num_symbols_ + 1; }
  int64_t separator_id() const { return num_symbols_; }
  const std::vector<std::string>& vocab() const { return vocab_; }

  // The next `batch_size` training rows (train split only), advancing this task's stream: two
  // calls give different batches, two tasks made alike give the same ones.
  SequenceBatch sample(int64_t batch_size);
  // The first n rows of the test split for this seed: the same rows on every call, none of them
  // ever returned by sample().
  SequenceBatch held_out(int64_t n) const;
  // The batch for the given digit rows, digits: int64 [B, L] with values in 0 .. num_symbols-1.
  SequenceBatch make_batch(const Tensor& digits) const;

  // Whether a row of L digits is a test row (Note [held-out split]).
  bool is_held_out(const std::vector<int64_t>& digits) const;

  // The token strings of ids (a vector, or an int64 tensor of one dimension), one per token, as
  // labels for plots. tt::Error for an id outside the vocabulary.
  std::vector<std::string> tokens(const std::vector<int64_t>& ids) const;
  std::vector<std::string> tokens(const Tensor& ids) const;
  // The tokens joined into one string: "31415926>62951413".
  std::string decode(const std::vector<int64_t>& ids) const;
  std::string decode(const Tensor& ids) const;

 private:
  std::vector<int64_t> draw_row(RandomStream& rng, bool test) const;

  SequenceTaskKind kind_;
  int64_t length_, num_symbols_;
  uint64_t seed_;
  std::vector<std::string> vocab_;
  RandomStream train_stream_;
};

// The task `kind` over rows of `length` digits 0-9, drawn from `seed`.
SequenceTask make_sequence_task(SequenceTaskKind kind, int64_t length, uint64_t seed = 0);

// Scores logits [B, 2L, V] (or any [B, T, V] with its targets) against target [B, T] where the
// target is not -100: the fraction of scored tokens whose argmax is right, and the fraction of
// rows whose scored tokens are all right (Note [sequence layout] on why the latter equals greedy
// decoding's exact-sequence accuracy). Rows with no scored token count as right.
struct SequenceAccuracy {
  double token = 0.0;
  double sequence = 0.0;
};
SequenceAccuracy sequence_accuracy(const Tensor& logits, const Tensor& target);

}  // namespace tt::data
