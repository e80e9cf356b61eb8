// The sequence tasks: digit rows drawn from Philox streams (stream 0 of the seed for training,
// stream 1 for the held-out rows), answers computed in plain C++, then wrapped in int64 tensors.
#include "tinytorch/data/sequence_tasks.h"

#include <algorithm>

#include "tinytorch/core/error.h"
#include "tinytorch/ops/factory.h"

namespace tt::data {

namespace {

constexpr uint64_t kTrainStream = 0, kHeldOutStream = 1;
constexpr uint64_t kTestOneIn = 8;  // about one row in eight is a test row
constexpr int64_t kIgnore = -100;   // cross_entropy's default ignore_index
// A row is redrawn until it falls in the wanted split; far more tries than this mean a bug.
constexpr int kMaxDraws = 100000;

// splitmix64's finalizer: every input bit flips about half of the output bits.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

bool hash_is_test(const std::vector<int64_t>& digits) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t d : digits) h = mix64(h ^ uint64_t(d + 1));
  return mix64(h) % kTestOneIn == 0;
}

// The answer the task asks for after the separator.
std::vector<int64_t> answer_of(SequenceTaskKind kind, std::vector<int64_t> digits) {
  switch (kind) {
    case SequenceTaskKind::kReverse: std::reverse(digits.begin(), digits.end()); break;
    case SequenceTaskKind::kSort: std::sort(digits.begin(), digits.end()); break;
    case SequenceTaskKind::kCopy: break;
  }
  return digits;
}

}  // namespace

std::string to_string(SequenceTaskKind kind) {
  switch (kind) {
    case SequenceTaskKind::kReverse: return "reverse";
    case SequenceTaskKind::kSort: return "sort";
    case SequenceTaskKind::kCopy: return "copy";
  }
  return "unknown";
}

SequenceTaskKind sequence_task_kind(const std::string& name) {
  for (SequenceTaskKind k : {SequenceTaskKind::kReverse, SequenceTaskKind::kSort, SequenceTaskKind::kCopy}) {
    if (to_string(k) == name) return k;
  }
  throw Error(detail::concat("sequence_task_kind: unknown task '", name, "', expected reverse, sort or copy"));
}

SequenceTask::SequenceTask(SequenceTaskKind kind, int64_t length, uint64_t seed, int64_t num_symbols)
    : kind_(kind), length_(length), num_symbols_(num_symbols), seed_(seed), train_stream_(seed, kTrainStream) {
  TT_CHECK(length >= 1, "SequenceTask: length must be at least 1, got ", length);
  TT_CHECK(num_symbols >= 2 && num_symbols <= 10, "SequenceTask: num_symbols must be in 2..10, got ", num_symbols);
  // With few possible rows, make sure that both splits hold at least one (count them all).
  int64_t rows = 1;
  for (int64_t i = 0; i < length && rows <= 4096; ++i) rows *= num_symbols;
  if (rows <= 4096) {
    int64_t test = 0;
    std::vector<int64_t> digits(size_t(length), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t v = r;
      for (auto& d : digits) {
        d = v % num_symbols;
        v /= num_symbols;
      }
      test += hash_is_test(digits);
    }
    TT_CHECK(test > 0 && test < rows, "SequenceTask: too few possible rows (", num_symbols, "^", length, " = ", rows,
             ") to keep a train and a held-out split, ", test, " of them held out; use a longer length");
  }
  for (int64_t d = 0; d < num_symbols; ++d) vocab_.push_back(std::to_string(d));
  vocab_.push_back(">");
}

bool SequenceTask::is_held_out(const std::vector<int64_t>& digits) const { return hash_is_test(digits); }

std::vector<int64_t> SequenceTask::draw_row(RandomStream& rng, bool test) const {
  std::vector<int64_t> digits(static_cast<size_t>(length_));
  for (int tries = 0; tries < kMaxDraws; ++tries) {
    for (auto& d : digits) d = int64_t(rng.uniform_below(uint64_t(num_symbols_)));
    if (hash_is_test(digits) == test) return digits;
  }
  throw Error(detail::concat("SequenceTask: no ", test ? "held-out" : "training", " row found in ", kMaxDraws, " draws"));
}

SequenceBatch SequenceTask::sample(int64_t batch_size) {
  TT_CHECK(batch_size >= 1, "SequenceTask::sample: batch_size must be at least 1, got ", batch_size);
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batch_size; ++b) {
    std::vector<int64_t> digits = draw_row(train_stream_, false);
    rows.insert(rows.end(), digits.begin(), digits.end());
  }
  return make_batch(tensor(rows, Shape{batch_size, length_}, kInt64));
}

SequenceBatch SequenceTask::held_out(int64_t n) const {
  TT_CHECK(n >= 1, "SequenceTask::held_out: n must be at least 1, got ", n);
  RandomStream rng(seed_, kHeldOutStream);
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<int64_t> digits = draw_row(rng, true);
    rows.insert(rows.end(), digits.begin(), digits.end());
  }
  return make_batch(tensor(rows, Shape{n, length_}, kInt64));
}

SequenceBatch SequenceTask::make_batch(const Tensor& digits) const {
  TT_CHECK(digits.defined(), "SequenceTask::make_batch: digits is an undefined tensor");
  TT_CHECK_DTYPE(digits.dtype() == kInt64, "SequenceTask::make_batch: digits must be int64, got ", digits.dtype());
  TT_CHECK_SHAPE(digits.dim() == 2 && digits.size(1) == length_, "SequenceTask::make_batch: digits must be [B, ",
                 length_, "], got ", digits.shape());
  const int64_t B = digits.size(0), L = length_, T = 2 * L;
  std::vector<int64_t> all = digits.to_vector<int64_t>();
  std::vector<int64_t> input, target, prompt, answer;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> row(all.begin() + b * L, all.begin() + (b + 1) * L);
    for (int64_t d : row) {
      TT_CHECK_INDEX(d >= 0 && d < num_symbols_, "SequenceTask::make_batch: digits must be in 0..", num_symbols_ - 1,
               ", got ", d);
    }
    std::vector<int64_t> ans = answer_of(kind_, row);
    // sequence = row, separator, ans; input drops its last token, target shifts it by one.
    std::vector<int64_t> seq = row;
    seq.push_back(separator_id());
    prompt.insert(prompt.end(), seq.begin(), seq.end());
    seq.insert(seq.end(), ans.begin(), ans.end());
    input.insert(input.end(), seq.begin(), seq.begin() + T);
    for (int64_t t = 0; t < T; ++t) target.push_back(t < L ? kIgnore : seq[size_t(t + 1)]);
    answer.insert(answer.end(), ans.begin(), ans.end());
  }
  SequenceBatch batch;
  batch.input = tensor(input, Shape{B, T}, kInt64);
  batch.target = tensor(target, Shape{B, T}, kInt64);
  batch.prompt = tensor(prompt, Shape{B, L + 1}, kInt64);
  batch.answer = tensor(answer, Shape{B, L}, kInt64);
  return batch;
}

std::vector<std::string> SequenceTask::tokens(const std::vector<int64_t>& ids) const {
  std::vector<std::string> out;
  for (int64_t id : ids) {
    TT_CHECK_INDEX(id >= 0 && id < vocab_size(), "SequenceTask::tokens: id ", id, " is outside the vocabulary 0..",
             vocab_size() - 1);
    out.push_back(vocab_[size_t(id)]);
  }
  return out;
}

std::vector<std::string> SequenceTask::tokens(const Tensor& ids) const {
  TT_CHECK(ids.defined(), "SequenceTask::tokens: ids is an undefined tensor");
  TT_CHECK_DTYPE(ids.dtype() == kInt64, "SequenceTask::tokens: ids must be int64, got ", ids.dtype());
  TT_CHECK_SHAPE(ids.dim() == 1, "SequenceTask::tokens: ids must have one dimension, got ", ids.shape());
  return tokens(ids.to_vector<int64_t>());
}

std::string SequenceTask::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  for (const std::string& t : tokens(ids)) text += t;
  return text;
}

std::string SequenceTask::decode(const Tensor& ids) const {
  std::string text;
  for (const std::string& t : tokens(ids)) text += t;
  return text;
}

SequenceTask make_sequence_task(SequenceTaskKind kind, int64_t length, uint64_t seed) {
  return SequenceTask(kind, length, seed);
}

SequenceAccuracy sequence_accuracy(const Tensor& logits, const Tensor& target) {
  TT_CHECK(logits.defined() && target.defined(), "sequence_accuracy: logits or target is an undefined tensor");
  TT_CHECK_SHAPE(logits.dim() == 3 && target.dim() == 2 && logits.size(0) == target.size(0) &&
                     logits.size(1) == target.size(1),
                 "sequence_accuracy: logits [B, T, V] and target [B, T] must agree, got ", logits.shape(), " and ",
                 target.shape());
  TT_CHECK_DTYPE(target.dtype() == kInt64, "sequence_accuracy: target must be int64, got ", target.dtype());
  const int64_t B = target.size(0), T = target.size(1);
  std::vector<int64_t> pred = logits.argmax(2).cpu().to_vector<int64_t>();
  std::vector<int64_t> want = target.cpu().to_vector<int64_t>();
  int64_t scored = 0, right = 0, rows_right = 0;
  for (int64_t b = 0; b < B; ++b) {
    bool all = true;
    for (int64_t t = 0; t < T; ++t) {
      size_t i = size_t(b * T + t);
      if (want[i] == kIgnore) continue;
      ++scored;
      bool ok = pred[i] == want[i];
      right += ok;
      all = all && ok;
    }
    rows_right += all;
  }
  SequenceAccuracy acc;
  acc.token = scored > 0 ? double(right) / double(scored) : 1.0;
  acc.sequence = B > 0 ? double(rows_right) / double(B) : 1.0;
  return acc;
}

}  // namespace tt::data
