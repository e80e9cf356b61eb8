// Sequence tasks (data/sequence_tasks.h): the layout of input, target, prompt and answer, the
// answers of each task, determinism per seed, the disjoint train and held-out splits, decoding,
// sequence_accuracy, and the errors for bad arguments.
#include <algorithm>
#include <set>

#include "test_util.h"

using namespace tt;
using namespace tt::data;

namespace {

std::vector<int64_t> row_of(const Tensor& t, int64_t b) { return t.select(0, b).to_vector<int64_t>(); }

std::set<std::vector<int64_t>> rows_of(const Tensor& digits) {
  std::set<std::vector<int64_t>> rows;
  for (int64_t b = 0; b < digits.size(0); ++b) rows.insert(row_of(digits, b));
  return rows;
}

// The digits of a batch: the first L tokens of each prompt.
Tensor digits_of(const SequenceBatch& batch, int64_t L) { return batch.prompt.slice(1, 0, L); }

}  // namespace

TEST_CASE("sequence task names round-trip and unknown names are rejected", "[data]") {
  for (auto kind : {SequenceTaskKind::kReverse, SequenceTaskKind::kSort, SequenceTaskKind::kCopy}) {
    CHECK(sequence_task_kind(to_string(kind)) == kind);
  }
  CHECK(to_string(SequenceTaskKind::kSort) == "sort");
  REQUIRE_THROWS_WITH(sequence_task_kind("rotate"), Catch::Contains("unknown task 'rotate'") &&
                                                        Catch::Contains("reverse, sort or copy"));
}

TEST_CASE("a sequence batch has the documented layout", "[data]") {
  SequenceTask task = make_sequence_task(SequenceTaskKind::kReverse, 6, 3);
  CHECK(task.vocab_size() == 11);
  CHECK(task.separator_id() == 10);
  CHECK(task.vocab().back() == ">");
  CHECK(task.vocab()[7] == "7");
  CHECK(task.sequence_length() == 12);
  CHECK(task.prompt_length() == 7);
  CHECK(task.answer_length() == 6);

  SequenceBatch b = task.sample(5);
  REQUIRE(b.input.shape() == Shape{5, 12});
  REQUIRE(b.target.shape() == Shape{5, 12});
  REQUIRE(b.prompt.shape() == Shape{5, 7});
  REQUIRE(b.answer.shape() == Shape{5, 6});
  for (const Tensor* t : {&b.input, &b.target, &b.prompt, &b.answer}) CHECK(t->dtype() == kInt64);

  for (int64_t r = 0; r < 5; ++r) {
    std::vector<int64_t> input = row_of(b.input, r), target = row_of(b.target, r);
    std::vector<int64_t> prompt = row_of(b.prompt, r), answer = row_of(b.answer, r);
    // input = prompt then the answer without its last token
    std::vector<int64_t> expect_input = prompt;
    expect_input.insert(expect_input.end(), answer.begin(), answer.end() - 1);
    CHECK(input == expect_input);
    CHECK(prompt[6] == task.separator_id());
    // target: -100 over the first L positions, then the answer
    for (int64_t t = 0; t < 6; ++t) CHECK(target[size_t(t)] == -100);
    CHECK(std::vector<int64_t>(target.begin() + 6, target.end()) == answer);
    // the target is the input shifted by one wherever it is scored
    for (size_t t = 6; t + 1 < 12; ++t) CHECK(target[t] == input[t + 1]);
    for (size_t t = 0; t < 6; ++t) CHECK(prompt[t] >= 0);
    for (size_t t = 0; t < 6; ++t) CHECK(prompt[t] <= 9);
  }
}

TEST_CASE("each task computes its own answer", "[data]") {
  Tensor digits = tensor({{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}});
  SequenceBatch rev = SequenceTask(SequenceTaskKind::kReverse, 5, 0).make_batch(digits);
  SequenceBatch srt = SequenceTask(SequenceTaskKind::kSort, 5, 0).make_batch(digits);
  SequenceBatch cpy = SequenceTask(SequenceTaskKind::kCopy, 5, 0).make_batch(digits);
  CHECK(row_of(rev.answer, 0) == std::vector<int64_t>{5, 1, 4, 1, 3});
  CHECK(row_of(rev.answer, 1) == std::vector<int64_t>{3, 5, 6, 2, 9});
  CHECK(row_of(srt.answer, 0) == std::vector<int64_t>{1, 1, 3, 4, 5});
  CHECK(row_of(srt.answer, 1) == std::vector<int64_t>{2, 3, 5, 6, 9});
  CHECK(row_of(cpy.answer, 0) == std::vector<int64_t>{3, 1, 4, 1, 5});
  CHECK(row_of(cpy.answer, 1) == std::vector<int64_t>{9, 2, 6, 5, 3});
  SequenceTask task(SequenceTaskKind::kReverse, 5, 0);
  CHECK(task.decode(rev.prompt.select(0, 0)) == "31415>");
  CHECK(task.decode(rev.input.select(0, 1)) == "92653>3562");
  CHECK(task.tokens(std::vector<int64_t>{10, 0, 9}) == std::vector<std::string>{">", "0", "9"});
}

TEST_CASE("sequence tasks are deterministic per seed and advance between batches", "[data]") {
  SequenceTask a = make_sequence_task(SequenceTaskKind::kSort, 8, 42);
  SequenceTask b = make_sequence_task(SequenceTaskKind::kSort, 8, 42);
  SequenceTask c = make_sequence_task(SequenceTaskKind::kSort, 8, 43);
  SequenceBatch a1 = a.sample(16), a2 = a.sample(16);
  SequenceBatch b1 = b.sample(16), b2 = b.sample(16);
  CHECK(a1.input.to_vector<int64_t>() == b1.input.to_vector<int64_t>());
  CHECK(a2.input.to_vector<int64_t>() == b2.input.to_vector<int64_t>());
  CHECK(a1.input.to_vector<int64_t>() != a2.input.to_vector<int64_t>());
  CHECK(a1.input.to_vector<int64_t>() != c.sample(16).input.to_vector<int64_t>());
  // held_out does not depend on how many batches were sampled, and is the same on every call
  CHECK(a.held_out(32).input.to_vector<int64_t>() == b.held_out(32).input.to_vector<int64_t>());
  CHECK(a.held_out(32).input.to_vector<int64_t>() == make_sequence_task(SequenceTaskKind::kSort, 8, 42)
                                                         .held_out(32)
                                                         .input.to_vector<int64_t>());
  // the first rows of a larger held-out set are the smaller one
  std::vector<int64_t> small = a.held_out(4).answer.to_vector<int64_t>();
  std::vector<int64_t> large = a.held_out(8).answer.to_vector<int64_t>();
  CHECK(std::equal(small.begin(), small.end(), large.begin()));
}

TEST_CASE("training rows and held-out rows never overlap", "[data]") {
  // A small space (4^5 = 1024 rows) so that overlaps would certainly show up.
  SequenceTask task(SequenceTaskKind::kReverse, 5, 7, 4);
  std::set<std::vector<int64_t>> train, test;
  for (int i = 0; i < 20; ++i) {
    for (const auto& r : rows_of(digits_of(task.sample(64), 5))) train.insert(r);
  }
  for (const auto& r : rows_of(digits_of(task.held_out(200), 5))) test.insert(r);
  for (const auto& r : train) CHECK_FALSE(task.is_held_out(r));
  for (const auto& r : test) CHECK(task.is_held_out(r));
  for (const auto& r : test) CHECK(train.count(r) == 0);
  // About one row in eight is held out: of 1024 rows, between 64 and 192.
  int64_t held = 0;
  for (int64_t v = 0; v < 1024; ++v) {
    std::vector<int64_t> r;
    for (int64_t x = v, i = 0; i < 5; ++i, x /= 4) r.push_back(x % 4);
    held += task.is_held_out(r);
  }
  CHECK(held > 64);
  CHECK(held < 192);
  CHECK(int64_t(test.size()) <= held);
  CHECK(train.size() > 600);  // the train split is well covered, so the check above means something
  // digits stay within num_symbols
  for (const auto& r : train) CHECK(*std::max_element(r.begin(), r.end()) < 4);
}

TEST_CASE("sequence_accuracy scores only the answer positions", "[data]") {
  SequenceTask task(SequenceTaskKind::kCopy, 3, 0);
  SequenceBatch b = task.make_batch(tensor({{1, 2, 3}, {4, 5, 6}}));
  const int64_t V = task.vocab_size();
  // Logits that put all their mass on the right token at every scored position, and on token 0
  // at the unscored ones: everything right.
  std::vector<float> logits(size_t(2 * 6 * V), 0.0f);
  std::vector<int64_t> target = b.target.to_vector<int64_t>();
  for (size_t i = 0; i < target.size(); ++i) logits[i * size_t(V) + size_t(target[i] < 0 ? 0 : target[i])] = 5.0f;
  Tensor right = tensor(logits, Shape{2, 6, V});
  SequenceAccuracy acc = sequence_accuracy(right, b.target);
  CHECK(acc.token == 1.0);
  CHECK(acc.sequence == 1.0);
  // One wrong token in row 1's answer: 5 of 6 tokens right, 1 of 2 rows.
  size_t pos = size_t(1 * 6 + 4);
  logits[pos * size_t(V) + size_t(target[pos])] = 0.0f;
  logits[pos * size_t(V) + 9] = 5.0f;
  acc = sequence_accuracy(tensor(logits, Shape{2, 6, V}), b.target);
  CHECK(acc.token == Approx(5.0 / 6.0));
  CHECK(acc.sequence == 0.5);
  REQUIRE_THROWS_WITH(sequence_accuracy(right, b.answer), Catch::Contains("must agree"));
}

TEST_CASE("sequence tasks reject bad arguments", "[data]") {
  REQUIRE_THROWS_WITH(SequenceTask(SequenceTaskKind::kReverse, 0, 0), Catch::Contains("length must be at least 1"));
  REQUIRE_THROWS_WITH(SequenceTask(SequenceTaskKind::kReverse, 4, 0, 11), Catch::Contains("num_symbols must be in 2..10"));
  REQUIRE_THROWS_WITH(SequenceTask(SequenceTaskKind::kReverse, 2, 0, 2), Catch::Contains("too few possible rows (2^2 = 4)"));
  SequenceTask task(SequenceTaskKind::kReverse, 4, 0);
  REQUIRE_THROWS_WITH(task.sample(0), Catch::Contains("batch_size must be at least 1"));
  REQUIRE_THROWS_WITH(task.held_out(0), Catch::Contains("n must be at least 1"));
  REQUIRE_THROWS_WITH(task.make_batch(tensor({{1, 2, 3}})), Catch::Contains("digits must be [B, 4], got [1, 3]"));
  REQUIRE_THROWS_WITH(task.make_batch(tensor({{1, 2, 3, 10}})), Catch::Contains("digits must be in 0..9, got 10"));
  REQUIRE_THROWS_WITH(task.make_batch(zeros({1, 4})), Catch::Contains("digits must be int64"));
  REQUIRE_THROWS_WITH(task.decode(std::vector<int64_t>{1, 11}), Catch::Contains("id 11 is outside the vocabulary"));
  REQUIRE_THROWS_WITH(task.tokens(tensor({{1, 2}})), Catch::Contains("ids must have one dimension"));
}
