// Module 08 walkthrough: the training loop, piece by piece, ending with an MLP that learns. One
// optimizer step with every part named; datasets (stored and computed), collation, the
// DataLoader's epochs and shuffles; a train/test split and an overfitting model that shows why
// held-out accuracy is the number to watch; batch size against throughput; the milestone run on
// three spiral arms; checkpoints (the state dict, the bytes of a safetensors file, atomic save,
// validated load); an exact resume; and two pitfalls, measured. Run it with
// `tools/tt walkthrough 08` (or build-*/modules/walkthrough_08). Each step prints its code (after
// ">>>") and the result. Files go to scratch directories that are removed when their step ends.
// Each numbered section is one function; `--step N` reruns section N alone, `--list` lists them
// (a step that needs the milestone's trained model, 9 or 10, trains it first).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

using Model = tt::nn::Sequential;

constexpr double kPi = 3.14159265358979323846;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// in -> hidden -> hidden -> classes, ReLU between.
std::shared_ptr<Model> make_mlp(int64_t in, int64_t hidden, int64_t classes) {
  using namespace tt::nn;
  return std::make_shared<Model>(Linear(in, hidden), ReLU(), Linear(hidden, hidden), ReLU(), Linear(hidden, classes));
}

// The fraction of rows whose largest logit is at the label. logits: [B, K] (K classes), labels: [B].
double accuracy(const tt::Tensor& logits, const tt::Tensor& labels) {
  return (logits.argmax(1) == labels).to(tt::kFloat64).mean().item<double>();
}

struct EpochStats {
  double loss = 0, acc = 0;  // means over the epoch's examples, taken while the weights moved
};

// One epoch of section 1's loop over the loader's batches: training mode; forward, loss,
// zero_grad, backward, step, then the schedule's step when there is one.
EpochStats train_epoch(Model& model, tt::optim::Optimizer& optimizer, tt::data::DataLoader& loader,
                       tt::optim::LRScheduler* schedule = nullptr) {
  model.train();
  double loss_sum = 0, correct = 0, seen = 0;
  for (const tt::data::Batch& batch : loader) {
    tt::Tensor logits = model.forward(batch.data);
    tt::Tensor loss = tt::F::cross_entropy(logits, batch.target);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (schedule) schedule->step();
    double n = double(batch.data.size(0));
    loss_sum += loss.item<double>() * n;
    correct += accuracy(logits.detach(), batch.target) * n;
    seen += n;
  }
  return {loss_sum / seen, correct / seen};
}

// Accuracy on a whole dataset, in evaluation mode and without recording a graph.
double evaluate(Model& model, const tt::data::TensorDataset& ds) {
  tt::NoGradGuard no_grad;
  model.eval();
  return accuracy(model.forward(ds.data()), ds.targets());
}

// A dataset that computes its examples instead of storing them: example i is x = i / n in
// [0, 1) with the label 1 where sin(6 pi x) > 0 (three bumps up, three down), else 0.
class SineSigns : public tt::data::Dataset {
 public:
  explicit SineSigns(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  tt::data::Example get(size_t index) const override {
    TT_CHECK_INDEX(index < n_, "SineSigns::get: index ", index, " is out of range for a dataset of size ", n_);
    double x = double(index) / double(n_);
    int64_t label = std::sin(6 * kPi * x) > 0 ? 1 : 0;
    return {tt::tensor({x}), tt::scalar_tensor(label, tt::kInt64)};
  }

 private:
  size_t n_;
};

// SHOW_ERROR, naming the error's class: the walkthrough's errors are IOErrors, IndexErrors and
// ShapeErrors, all of them tt::Errors.
template <typename F>
void show_typed_error(const char* code, F f) {
  std::cout << ">>> " << code << "\n";
  try {
    f();
    std::cout << "    (no error?)\n";
  } catch (const tt::IOError& e) {
    std::cout << "    tt::IOError: " << e.what() << "\n";
  } catch (const tt::IndexError& e) {
    std::cout << "    tt::IndexError: " << e.what() << "\n";
  } catch (const tt::ShapeError& e) {
    std::cout << "    tt::ShapeError: " << e.what() << "\n";
  } catch (const tt::Error& e) {
    std::cout << "    tt::Error: " << e.what() << "\n";
  }
}
#define SHOW_TYPED_ERROR(...) show_typed_error(#__VA_ARGS__, [&] { (void)(__VA_ARGS__); })

// A fresh directory under the system's temp directory, removed with its contents when the last
// ScratchDir that owns it goes (it can be moved, not copied).
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tt_walkthrough_08_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw tt::IOError("walkthrough: cannot create " + pattern);
    path_ = pattern;
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // The names in the directory, sorted, joined by two spaces.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : "  ") + n;
    return out;
  }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// One byte as two hex digits.
std::string hex_byte(char c) {
  char buf[4];
  std::snprintf(buf, sizeof buf, "%02x", unsigned(uint8_t(c)));
  return buf;
}

// The first 8 bytes of `bytes` as a little-endian unsigned integer.
uint64_t u64le(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  return n;
}

// Everything training needs to continue, in one file: the model's state dict under "model.",
// the optimizer's under "optimizer.", the schedule's under "schedule.", and the number of the
// next epoch in the metadata (the DataLoader's order is a function of seed and epoch).
void save_checkpoint(const std::string& path, const Model& model, const tt::optim::Optimizer& optimizer,
                     const tt::optim::LRScheduler& schedule, uint64_t next_epoch) {
  tt::nn::StateDict all;
  for (const auto& [name, t] : model.state_dict()) all.insert("model." + name, t);
  for (const auto& [name, t] : optimizer.state_dict()) all.insert("optimizer." + name, t);
  for (const auto& [name, t] : schedule.state_dict()) all.insert("schedule." + name, t);
  tt::save(all, path, {{"next_epoch", std::to_string(next_epoch)}});
}

// The entries of `all` whose names start with `prefix`, with the prefix removed.
tt::nn::StateDict section(const tt::nn::StateDict& all, const std::string& prefix) {
  tt::nn::StateDict out;
  for (const auto& [name, t] : all)
    if (name.compare(0, prefix.size(), prefix) == 0) out.insert(name.substr(prefix.size()), t);
  return out;
}

void load_checkpoint(const std::string& path, Model& model, tt::optim::Optimizer& optimizer,
                     tt::optim::LRScheduler& schedule, tt::data::DataLoader& loader) {
  tt::nn::StateDict all = tt::load(path);
  model.load_state_dict(section(all, "model."));
  optimizer.load_state_dict(section(all, "optimizer."));
  schedule.load_state_dict(section(all, "schedule."));
  loader.set_epoch(std::stoull(tt::load_metadata(path).at("next_epoch")));
}

// The largest |a - b| over all parameters of two models of the same architecture.
double max_param_diff(const Model& a, const Model& b) {
  std::vector<tt::Tensor> pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

// The first k entries of an index order, as "[a, b, c, ...]".
std::string first(const std::vector<int64_t>& order, size_t k) {
  std::string s = "[";
  for (size_t i = 0; i < k && i < order.size(); ++i) s += (i ? ", " : "") + std::to_string(order[i]);
  return s + (order.size() > k ? ", ...]" : "]");
}

// The targets of every batch of one epoch, as "[0, 1, 2, 3] [4, 5, 6, 7] ...".
std::string epoch_targets(tt::data::DataLoader& loader) {
  std::string s;
  for (const tt::data::Batch& b : loader) s += first(b.target.to_vector<int64_t>(), 99) + " ";
  return s;
}

// -----------------------------------------------------------------------------------------------

// Returns the spirals, which steps 2 to 5 read again.
std::shared_ptr<tt::data::TensorDataset> step_1_one_step() {
  say("Training repeats one step: push a batch through the model (forward), score the output\n"
      "(loss), clear the previous step's gradients (zero_grad), compute new ones (backward), and\n"
      "move every parameter a little against its gradient (step). Here is one step on 32 points\n"
      "of three interleaved spiral arms (400 points per arm, noise 0.05, seed 0), the dataset of\n"
      "this module's milestone.");
  RUN(tt::manual_seed(0));
  RUN(auto spirals = tt::data::make_spirals(400, 3, 0.05, 0));  // 400 points per arm, 3 arms, noise, seed
  RUN(auto model = make_mlp(2, 64, 3));
  RUN(tt::optim::Adam optimizer(model->parameters(), tt::optim::AdamOptions(1e-2)));
  RUN(tt::Tensor x = spirals->data().slice(0, 0, 32));
  RUN(tt::Tensor y = spirals->targets().slice(0, 0, 32));
  SHOW(x.shape());
  SHOW(y.slice(0, 0, 10));
  say("1. forward: one row of 3 logits (unnormalized class scores) per point.");
  RUN(tt::Tensor logits = model->forward(x));
  SHOW(logits.shape());
  say("2. loss: cross-entropy (module 06), one number. An untrained model spreads its bets about\n"
      "evenly over the 3 classes, and -ln(1/3) = 1.0986.");
  RUN(tt::Tensor loss = tt::F::cross_entropy(logits, y));
  SHOW(loss.item<float>());
  say("3. zero_grad: drop the gradients of the previous step, which backward would otherwise add\n"
      "to (module 04). With set_to_none, the default, .grad becomes undefined.");
  RUN(optimizer.zero_grad());
  SHOW(model->parameters()[0].grad().defined());
  say("4. backward: every parameter gets the gradient of the loss, in its own shape.");
  RUN(loss.backward());
  SHOW(model->parameters()[0].grad().shape());
  say("5. step: Adam moves each parameter against its gradient (module 07). The same batch now\n"
      "scores a little better:");
  RUN(optimizer.step());
  SHOW(tt::F::cross_entropy(model->forward(x), y).item<float>());
  say("Ten more steps on this one batch drive its loss down fast. That is memorizing 32 points,\n"
      "not learning spirals; the rest of the module is about doing this over a whole dataset and\n"
      "measuring the right thing.");
  std::cout << ">>> for (int i = 1; i <= 10; ++i) { forward; loss; zero_grad; backward; step; }\n"
               "    the loss before each step:\n    ";
  for (int i = 1; i <= 10; ++i) {
    tt::Tensor l = tt::F::cross_entropy(model->forward(x), y);
    optimizer.zero_grad();
    l.backward();
    optimizer.step();
    std::cout << fmt("%.3f", l.item<double>()) << (i < 10 ? " " : "\n");
  }
  say("Two more pieces complete a training loop: a schedule, which changes the learning rate as\n"
      "training goes (its step() follows the optimizer's), and evaluation, which runs the model\n"
      "in eval() mode (dropout off) under NoGradGuard (no graph recorded) on data it never\n"
      "trained on. Both appear in section 8.");
  return spirals;
}

// -----------------------------------------------------------------------------------------------

// Returns the computed dataset, which step 3 reads again.
SineSigns step_2_dataset() {
  const auto spirals = quietly(step_1_one_step);
  say("make_spirals returns a TensorDataset: an [N, 2] tensor of points and an [N] tensor of\n"
      "labels. Example i is row i of each: a view, no copy. Its target is 0-d, a single label.");
  SHOW(spirals->size());
  RUN(tt::data::Example e = spirals->get(7));
  SHOW(e.data);
  SHOW(e.target);
  SHOW(e.target.dim());
  say("The interface asks only for size() and get(i). So a dataset may also read, decode or\n"
      "compute its examples when asked, and hold far more than memory would. This one (a class\n"
      "in this file) computes them and stores nothing but its size:");
  RUN(SineSigns waves(1000000));
  SHOW(waves.size());
  RUN(tt::data::Example w = waves.get(250000));
  SHOW(w.data);
  SHOW(w.target);
  SHOW_TYPED_ERROR(waves.get(1000000));
  return waves;
}

// -----------------------------------------------------------------------------------------------

void step_3_batching() {
  const auto spirals = quietly(step_1_one_step);
  const SineSigns waves = quietly(step_2_dataset);
  say("A model takes a batch [B, ...], not one example. collate() stacks B examples: data\n"
      "[2] -> [B, 2], and 0-d targets -> [B], the shape cross_entropy wants for class labels.");
  RUN(tt::data::Batch b = tt::data::collate({spirals->get(0), spirals->get(1), spirals->get(2)}));
  SHOW(b.data.shape());
  SHOW(b.target);
  say("get_batch(indices) does the same for a list of indices: TensorDataset with one\n"
      "index_select per tensor (the chosen rows, copied), any other dataset through get() and\n"
      "collate(). The computed dataset batches without ever holding its million examples:");
  SHOW(spirals->get_batch({5, 0, 9}).data.shape());
  RUN(tt::data::Batch wb = waves.get_batch({100000, 250000, 400000, 600000}));
  SHOW(wb.data.shape());
  SHOW(wb.target);
  say("Examples must agree in shape and dtype, or the batch would be ragged:");
  SHOW_TYPED_ERROR(tt::data::collate({spirals->get(0), waves.get(0)}));
}

// -----------------------------------------------------------------------------------------------

void step_4_dataloader() {
  const auto spirals = quietly(step_1_one_step);
  say("A DataLoader cuts a dataset into batches. Each range-for over it is one epoch, which\n"
      "visits every example exactly once. Ten examples whose targets are their own indices, in\n"
      "batches of 4: ceil(10 / 4) = 3 batches, the last one short.");
  RUN(auto ten = std::make_shared<tt::data::TensorDataset>(tt::arange(10, tt::kFloat32).view({10, 1}),
                                                          tt::arange(10, tt::kInt64)));
  RUN(tt::data::DataLoader in_order(ten, tt::data::DataLoaderOptions().batch_size(4)));
  SHOW(in_order.size());
  SHOW(epoch_targets(in_order));
  say("drop_last skips the short batch: floor(10 / 4) = 2 batches, and examples 8 and 9 are not\n"
      "seen this epoch. Useful when every batch must have the same size; with shuffling, the\n"
      "skipped examples change from epoch to epoch.");
  RUN(tt::data::DataLoader no_tail(ten, tt::data::DataLoaderOptions().batch_size(4).drop_last(true)));
  SHOW(no_tail.size());
  SHOW(epoch_targets(no_tail));
  say("With shuffle(true), epoch e visits the examples in the order permutation(N, seed, e): a\n"
      "Fisher-Yates shuffle driven by Philox with key `seed` and stream `e`. Each epoch gets a\n"
      "new order, and the same (seed, epoch) always gives the same one, on any machine.");
  RUN(tt::data::DataLoader shuffled(ten, tt::data::DataLoaderOptions().batch_size(4).shuffle(true).seed(0)));
  SHOW(shuffled.epoch());
  SHOW(epoch_targets(shuffled));
  SHOW(shuffled.epoch());
  SHOW(epoch_targets(shuffled));
  say("The first indices of two epochs over all 1,200 spiral points, from two loaders made with\n"
      "the same seed, and one with another seed:");
  RUN(tt::data::DataLoaderOptions opts = tt::data::DataLoaderOptions().batch_size(32).shuffle(true));
  RUN(tt::data::DataLoader loader_a(spirals, tt::data::DataLoaderOptions(opts).seed(0)));
  RUN(tt::data::DataLoader loader_b(spirals, tt::data::DataLoaderOptions(opts).seed(0)));
  RUN(tt::data::DataLoader loader_c(spirals, tt::data::DataLoaderOptions(opts).seed(1)));
  std::cout << "    seed 0, epoch 0: " << first(loader_a.order(0), 10) << "\n"
            << "    seed 0, epoch 1: " << first(loader_a.order(1), 10) << "\n"
            << "    seed 0, epoch 0: " << first(loader_b.order(0), 10) << "   (another loader)\n"
            << "    seed 1, epoch 0: " << first(loader_c.order(0), 10) << "\n";
  say("Because the order depends only on (seed, epoch), a resumed run can replay exactly the\n"
      "batches it would have seen: set_epoch(e) makes the next loop epoch e (section 11).");
}

// -----------------------------------------------------------------------------------------------

// Returns the split, which steps 7 to 12 read again.
tt::data::TrainTestSplit step_5_held_out() {
  const auto spirals = quietly(step_1_one_step);
  say("The test part is kept out of training entirely; it stands for the points the model will\n"
      "meet later. train_test_split draws it at random with a seed: here 20%.");
  RUN(tt::data::TrainTestSplit split = tt::data::train_test_split(*spirals, 0.2, 0));
  SHOW(split.train->size());
  SHOW(split.test->size());
  std::cout << ">>> test examples per class\n    ";
  for (int64_t k = 0; k < 3; ++k)
    std::cout << "class " << k << ": " << (split.test->targets() == k).sum().item<int64_t>() << (k < 2 ? ", " : "\n");
  say("Preprocessing is part of the model, so its statistics come from the training part only.\n"
      "Normalize::fit takes the per-feature mean and std; the same numbers are then applied to\n"
      "both parts. Fitting on all the data would let the test points shape the input scale: a\n"
      "small leak here, a large one when the test set differs from the training set.");
  RUN(tt::data::Normalize norm = tt::data::Normalize::fit(split.train->data()));
  SHOW(norm.mean);
  SHOW(norm.stddev);
  SHOW(tt::data::Normalize::fit(spirals->data()).mean);
  say("The spirals are already centred in [-1, 1]^2, so the milestone uses the raw features;\n"
      "the 64 pixel features of make_digits are a case where normalizing matters more.");
  return split;
}

// -----------------------------------------------------------------------------------------------

void step_6_overfitting() {
  say("A large MLP (2-128-128-2, 17,000 parameters) trained on 40 noisy points of two moons, full\n"
      "batch, scored on 2,000 fresh points from the same distribution:");
  RUN(tt::manual_seed(0));
  RUN(auto few = tt::data::make_moons(40, 0.3, 1));     // 40 points, noise 0.3, seed 1
  RUN(auto fresh = tt::data::make_moons(2000, 0.3, 2));  // the same distribution, seed 2
  RUN(auto big = make_mlp(2, 128, 2));
  RUN(tt::optim::Adam big_opt(big->parameters(), tt::optim::AdamOptions(1e-2)));
  std::cout << "    step   train loss  train acc   test loss  test acc\n";
  for (int step = 0; step <= 400; ++step) {
    if (step == 0 || step == 25 || step == 50 || step == 100 || step == 200 || step == 400) {
      tt::NoGradGuard no_grad;
      big->eval();
      tt::Tensor lt = big->forward(few->data()), lf = big->forward(fresh->data());
      std::cout << "    " << fmt("%4.0f", step) << fmt("%13.4f", tt::F::cross_entropy(lt, few->targets()).item<double>())
                << fmt("%10.1f%%", 100 * accuracy(lt, few->targets()))
                << fmt("%12.4f", tt::F::cross_entropy(lf, fresh->targets()).item<double>())
                << fmt("%9.1f%%", 100 * accuracy(lf, fresh->targets())) << "\n";
    }
    big->train();
    tt::Tensor l = tt::F::cross_entropy(big->forward(few->data()), few->targets());
    big_opt.zero_grad();
    l.backward();
    big_opt.step();
  }
  say("The training set is learned perfectly; its loss heads to zero. The held-out accuracy\n"
      "stops improving early, and the held-out loss climbs: the model grows ever more sure of a\n"
      "boundary bent around 40 noisy points, so its confident mistakes on fresh points cost more\n"
      "and more. Only the held-out numbers say how the model will do on points it has not seen.\n"
      "Remedies: more data, a smaller model, weight decay, or early stopping (keep the checkpoint\n"
      "with the best score on a validation split, and touch the test split once, at the end).");
}

// -----------------------------------------------------------------------------------------------

void step_7_batch_size() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  say("One epoch over the 960 training points from the same initial model, for several batch\n"
      "sizes. The model (2-64-64-3) has 4,416 weights, each one multiply-add per example: 8.8\n"
      "kFLOP forward, and a backward of twice that, so 26.5 kFLOP per example per step. The\n"
      "FLOP/byte column is the arithmetic intensity of the middle layer's product, [B, 64] @\n"
      "[64, 64]: 2 B 64 64 FLOPs over the 4 (64 B + 64 64 + 64 B) bytes of its operands and\n"
      "result. Each epoch is timed three times from the same start, and the best kept.");
  {
    const double flop_per_example = 3.0 * 2.0 * 4416;
    constexpr int kReps = 3;
    std::cout << "    batch  steps/epoch   epoch time   examples/s    GFLOP/s   FLOP/byte   test acc after 1 epoch\n";
    for (int64_t bs : {1, 8, 32, 128, 480}) {
      double secs = 1e30, acc = 0;
      int64_t steps = 0;
      for (int rep = 0; rep < kReps; ++rep) {  // the same start each time: the same epoch, timed again
        tt::manual_seed(0);
        auto m = make_mlp(2, 64, 3);
        tt::optim::Adam opt(m->parameters(), tt::optim::AdamOptions(1e-2));
        tt::data::DataLoader ld(split.train, tt::data::DataLoaderOptions().batch_size(bs).shuffle(true).seed(0));
        auto t0 = std::chrono::steady_clock::now();
        train_epoch(*m, opt, ld);
        secs = std::min(secs, seconds_since(t0));
        acc = evaluate(*m, *split.test);
        steps = int64_t(ld.size());
      }
      const double per_s = double(split.train->size()) / secs;
      const double b = double(bs), intensity = 2.0 * b * 64 * 64 / (4.0 * (64 * b + 64 * 64 + 64 * b));
      std::cout << "    " << fmt("%5.0f", b) << fmt("%13.0f", double(steps)) << fmt("%11.1f ms", 1e3 * secs)
                << fmt("%13.0f", per_s) << fmt("%11.2f", per_s * flop_per_example / 1e9) << fmt("%12.2f", intensity)
                << fmt("%13.1f%%", 100 * acc) << "\n";
    }
    std::cout << "    (" << best_of(kReps) << ")\n";
  }
  say("Every step pays a fixed cost (a dozen small ops, each with its own dispatch, autograd\n"
      "node and allocation, then Adam's update of 6 tensors) that a batch of 1 cannot spread. So\n"
      "examples per second grow with the batch until the arithmetic dominates. But an epoch of\n"
      "big batches is few steps: at the same learning rate, fewer updates and a worse model\n"
      "after one epoch. (Batch 1 makes the most updates, but each follows a single point's\n"
      "gradient: noisy enough, at this learning rate, to waste much of them.) The batch size\n"
      "trades speed per example against progress per example; 32 to 128 is the usual middle\n"
      "for a model this small. Times vary on a shared machine; rerun to compare.");
  say("If the biggest batches come out slower than batch 32, that is threading: from some matrix\n"
      "size on, the BLAS splits each product over threads, and for products this small waking them\n"
      "can cost more than the work. With a BLAS that keeps its own pool of threads beside OpenMP's\n"
      "(OpenBLAS's pthreads build) batch 128 ran 2.6 times slower than batch 32 in one run on an\n"
      "idle 2-core AMD EPYC with 2 threads; tinytorch links the OpenMP build, which shares one pool (tools/tt doctor\n"
      "says which you have). Compare with OMP_NUM_THREADS=1 in the environment.");
}

// -----------------------------------------------------------------------------------------------

// Step 8's trained model, which steps 9 and 10 read: kept by step 8, or trained again (quietly)
// when step 8 did not run.
std::shared_ptr<Model> g_milestone_mlp;

void step_8_milestone() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  say("The whole loop: a seeded model, Adam with a cosine schedule from 0.01 down to 0 over every\n"
      "step, batches of 32 in a new order each epoch, 30 epochs. After each epoch, the held-out\n"
      "accuracy, measured in eval() mode under NoGradGuard.");
  double milestone_acc = 0, first_loss = 0, last_loss = 0;
  RUN(tt::manual_seed(0));
  RUN(auto mlp = make_mlp(2, 64, 3));
  {
    std::cout << *mlp << "\n";
    RUN(tt::data::DataLoader loader(split.train, tt::data::DataLoaderOptions().batch_size(32).shuffle(true).seed(0)));
    RUN(tt::optim::Adam adam(mlp->parameters(), tt::optim::AdamOptions(1e-2)));
    RUN(const int epochs = 30);
    RUN(tt::optim::CosineAnnealingLR cosine(adam, epochs * int64_t(loader.size())));  // T_max: every step
    say("train_epoch and evaluate (both in this file) are section 1's step over every batch, and\n"
        "the evaluation:\n"
        "    model.train();\n"
        "    for (const tt::data::Batch& batch : loader) {\n"
        "      tt::Tensor logits = model.forward(batch.data);\n"
        "      tt::Tensor loss = tt::F::cross_entropy(logits, batch.target);\n"
        "      optimizer.zero_grad();  loss.backward();  optimizer.step();  schedule->step();\n"
        "    }\n"
        "    { tt::NoGradGuard no_grad;  model.eval();  accuracy(model.forward(test_x), test_y); }");
    std::cout << ">>> for each epoch: train_epoch(*mlp, adam, loader, &cosine); evaluate(*mlp, *split.test);\n";
    std::cout << "    epoch   lr at end   train loss   train acc   test acc\n";
    auto t0 = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      EpochStats s = train_epoch(*mlp, adam, loader, &cosine);
      milestone_acc = evaluate(*mlp, *split.test);
      if (epoch == 1) first_loss = s.loss;
      last_loss = s.loss;
      std::cout << "    " << fmt("%5.0f", epoch) << fmt("%12.5f", cosine.get_last_lr()[0]) << fmt("%13.4f", s.loss)
                << fmt("%11.1f%%", 100 * s.acc) << fmt("%10.1f%%", 100 * milestone_acc) << "\n";
    }
    std::cout << "    (" << epochs * loader.size() << " steps in " << fmt("%.2f", seconds_since(t0)) << " s: one run, "
              << tt::get_num_threads() << (tt::get_num_threads() == 1 ? " thread)\n" : " threads)\n");
  }
  std::cout << "\n    held-out accuracy " << fmt("%.1f%%", 100 * milestone_acc) << " on " << split.test->size()
            << " points never trained on: " << (milestone_acc >= 0.97 ? "the milestone (>= 97%) is reached.\n" : "BELOW the 97% target.\n");
  say("The training columns are averages over each epoch while the weights were moving, and\n"
      "the model trains in train() mode; the test column uses the weights at the end of the\n"
      "epoch. That is why they can disagree in either direction early on. The loss fell from\n" +
      fmt("%.3f", first_loss) + " to " + fmt("%.3f", last_loss) +
      "; the cosine schedule's small final steps let it settle into a minimum\n"
      "instead of bouncing around it. No straight boundary can separate arms that wind around\n"
      "each other: a linear classifier stays under 70% here (tests/data measures it).");
  g_milestone_mlp = mlp;
}

// -----------------------------------------------------------------------------------------------

std::shared_ptr<Model> milestone_mlp() {
  if (!g_milestone_mlp) quietly(step_8_milestone);
  return g_milestone_mlp;
}

// Step 9's checkpoint, which step 10 reads again: the scratch directory, the file in it and its
// bytes, the model reloaded from it, and the trained model's outputs on the test points.
struct Checkpoint {
  ScratchDir dir;
  std::string path, bytes;
  std::shared_ptr<Model> reloaded;
  tt::Tensor out_mlp;
};

Checkpoint step_9_checkpoints() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  const std::shared_ptr<Model> mlp = milestone_mlp();
  say("The milestone's model, trained. Its state dict names each tensor by its path in the\n"
      "module tree. A Sequential names its children 0, 1, 2, ...; the ReLUs (1 and 3) have no\n"
      "parameters.");
  std::cout << ">>> for (auto& [name, t] : mlp->state_dict()) ...\n";
  for (const auto& [name, t] : mlp->state_dict())
    std::cout << "    " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') << t.shape() << "\n";
  SHOW(mlp->num_parameters());
  RUN(ScratchDir dir);
  RUN(std::string path = dir.file("mlp.safetensors"));
  RUN(tt::save(*mlp, path, {{"epochs", "30"}, {"data", "spirals"}}));
  SHOW(std::filesystem::file_size(path));
  say("The file is an 8-byte little-endian header length N, N bytes of JSON, then the raw\n"
      "tensors, packed back to back in the header's order. The first 8 bytes, least significant\n"
      "first:");
  RUN(std::string bytes = read_file(path));
  {
    std::cout << "    ";
    for (int i = 0; i < 8; ++i) std::cout << hex_byte(bytes[size_t(i)]) << " ";
    std::cout << "\n";
  }
  RUN(uint64_t header_len = u64le(bytes));
  SHOW(header_len);
  say("The header (one line in the file; broken after each entry here). Offsets count from the\n"
      "first byte after the header; the writer pads it with spaces to a multiple of 8 bytes.");
  {
    std::string header = bytes.substr(8, size_t(header_len));
    std::string shown = "    ";
    for (char c : header) {
      shown += c;
      if (c == ',' && shown.size() >= 2 && shown[shown.size() - 2] == '}') shown += "\n    ";
    }
    std::cout << shown << "\n";
  }
  say("Every byte is accounted for: 8 + N + 4 bytes for each float32 parameter.");
  SHOW(8 + header_len + 4 * uint64_t(mlp->num_parameters()));
  SHOW(tt::load_metadata(path).at("epochs"));
  say("Reloading into a freshly built model (other random weights) gives the very same function,\n"
      "bit for bit: the file holds the exact float32 values.");
  RUN(tt::manual_seed(123));
  RUN(auto reloaded = make_mlp(2, 64, 3));
  SHOW(evaluate(*reloaded, *split.test));
  RUN(tt::load(*reloaded, path));
  SHOW(evaluate(*reloaded, *split.test));
  tt::Tensor out_mlp, out_reloaded;
  {
    tt::NoGradGuard no_grad;
    out_mlp = mlp->forward(split.test->data());
    out_reloaded = reloaded->forward(split.test->data());
  }
  SHOW((out_reloaded - out_mlp).abs().max().item<float>());
  return {std::move(dir), path, bytes, reloaded, out_mlp};
}

// -----------------------------------------------------------------------------------------------

void step_10_atomic_save() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  const std::shared_ptr<Model> mlp = milestone_mlp();
  const Checkpoint checkpoint = quietly(step_9_checkpoints);
  const ScratchDir& dir = checkpoint.dir;
  const std::string &path = checkpoint.path, &bytes = checkpoint.bytes;
  const std::shared_ptr<Model> reloaded = checkpoint.reloaded;
  const tt::Tensor out_mlp = checkpoint.out_mlp;
  tt::Tensor out_reloaded;
  say("tt::save writes a temporary file beside the target, flushes it to disk, then renames it\n"
      "over the target. A rename is atomic: a reader sees the old file or the new one, never half\n"
      "of one, and a crash midway leaves the old checkpoint whole. No temporary file remains:");
  RUN(tt::save(*mlp, path));
  SHOW(dir.listing());
  SHOW_TYPED_ERROR(tt::save(*mlp, dir.file("no_such_dir/mlp.safetensors")));
  say("Loading treats the file as hostile: every size and offset in the header is checked\n"
      "against the file before anything is allocated or copied. A checkpoint cut short (a full\n"
      "disk, an interrupted copy) gives a clean IOError:");
  RUN(write_file(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() - 100)));
  SHOW_TYPED_ERROR(tt::load(*reloaded, dir.file("cut.safetensors")));
  RUN(write_file(dir.file("junk.safetensors"), "this is not a checkpoint at all"));
  SHOW_TYPED_ERROR(tt::load(*reloaded, dir.file("junk.safetensors")));
  say("And a failed load changes nothing: the model still computes what it did.");
  {
    tt::NoGradGuard no_grad;
    out_reloaded = reloaded->forward(split.test->data());
  }
  SHOW((out_reloaded - out_mlp).abs().max().item<float>());
}

// -----------------------------------------------------------------------------------------------

void step_11_resuming() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  const ScratchDir dir;
  say("To continue a run as if it had never stopped, a checkpoint needs everything the next\n"
      "step reads: the weights, the optimizer's state (Adam's two moments and step count per\n"
      "parameter, and its learning rate), the schedule's position, and the next epoch number\n"
      "(which fixes the data order). save_checkpoint (in this file) puts them all in one file,\n"
      "under the prefixes model., optimizer. and schedule.\n"
      "Run A trains 6 epochs straight. Run B trains 3, saves, and is thrown away; fresh objects\n"
      "(other random weights) load the checkpoint and train 3 more. Run C does the same but\n"
      "restores only the model's weights.");
  {
    const int64_t steps_per_epoch = int64_t(split.train->size() + 31) / 32;
    auto make_run = [&](uint64_t init_seed) {
      tt::manual_seed(init_seed);
      struct Run {
        std::shared_ptr<Model> model;
        std::unique_ptr<tt::optim::AdamW> opt;
        std::unique_ptr<tt::optim::CosineAnnealingLR> schedule;
        std::unique_ptr<tt::data::DataLoader> loader;
      } r;
      r.model = make_mlp(2, 32, 3);
      r.opt = std::make_unique<tt::optim::AdamW>(r.model->parameters(), tt::optim::AdamWOptions(1e-2));
      r.schedule = std::make_unique<tt::optim::CosineAnnealingLR>(*r.opt, 6 * steps_per_epoch);
      r.loader = std::make_unique<tt::data::DataLoader>(
          split.train, tt::data::DataLoaderOptions().batch_size(32).shuffle(true).seed(7));
      return r;
    };
    auto a = make_run(0);
    for (int e = 0; e < 6; ++e) train_epoch(*a.model, *a.opt, *a.loader, a.schedule.get());

    auto b = make_run(0);
    for (int e = 0; e < 3; ++e) train_epoch(*b.model, *b.opt, *b.loader, b.schedule.get());
    std::string ckpt = dir.file("resume.safetensors");
    save_checkpoint(ckpt, *b.model, *b.opt, *b.schedule, b.loader->epoch());
    std::cout << ">>> save_checkpoint(ckpt, *b.model, *b.opt, *b.schedule, b.loader->epoch());\n";
    tt::nn::StateDict saved = tt::load(ckpt);
    std::cout << "    " << saved.size() << " tensors, among them:\n";
    for (std::string k : {"model.0.weight", "optimizer.state.0.step", "optimizer.state.0.exp_avg",
                                 "optimizer.state.0.exp_avg_sq", "optimizer.param_groups.0.lr", "schedule.last_epoch"})
      std::cout << "      " << k << std::string(30 - k.size(), ' ') << saved[k].shape() << " " << saved[k].dtype() << "\n";
    std::cout << "    next_epoch = " << tt::load_metadata(ckpt).at("next_epoch") << "\n";

    auto resumed = make_run(99);
    load_checkpoint(ckpt, *resumed.model, *resumed.opt, *resumed.schedule, *resumed.loader);
    std::cout << ">>> load_checkpoint(ckpt, *resumed.model, *resumed.opt, *resumed.schedule, *resumed.loader);\n";
    for (int e = 0; e < 3; ++e) train_epoch(*resumed.model, *resumed.opt, *resumed.loader, resumed.schedule.get());

    auto weights_only = make_run(99);
    weights_only.model->load_state_dict(section(tt::load(ckpt), "model."));
    weights_only.loader->set_epoch(3);
    for (int e = 0; e < 3; ++e)
      train_epoch(*weights_only.model, *weights_only.opt, *weights_only.loader, weights_only.schedule.get());

    std::cout << "    run B, resumed from everything:  max |parameter - run A's| = "
              << fmt("%g", max_param_diff(*resumed.model, *a.model)) << "\n"
              << "    run C, resumed from weights only: max |parameter - run A's| = "
              << fmt("%g", max_param_diff(*weights_only.model, *a.model)) << "\n";
  }
  say("Run B matches run A bit for bit: the same computations on the same numbers in the same\n"
      "order. Run C drifts off: its Adam starts again with zero moments, a step count of 0 (so a\n"
      "bias correction meant for step 1) and a schedule back at the full learning rate.");
}

// -----------------------------------------------------------------------------------------------

void step_12_pitfalls() {
  const tt::data::TrainTestSplit split = quietly(step_5_held_out);
  say("Not shuffling. Sort the training points by class and feed them in that order: ten\n"
      "batches of class 0, then ten of class 1, then ten of class 2. Each run of one class pulls\n"
      "the model towards answering that class for everything, and the runs undo each other.");
  {
    std::vector<int64_t> labels = split.train->targets().to_vector<int64_t>();
    std::vector<int64_t> idx(labels.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) { return labels[size_t(i)] < labels[size_t(j)]; });
    tt::Tensor index = tt::tensor(idx, tt::Shape{int64_t(idx.size())}, tt::kInt64);
    auto sorted = std::make_shared<tt::data::TensorDataset>(split.train->data().index_select(0, index),
                                                           split.train->targets().index_select(0, index));
    for (bool shuffle : {false, true}) {
      tt::manual_seed(0);
      auto m = make_mlp(2, 64, 3);
      tt::optim::Adam opt(m->parameters(), tt::optim::AdamOptions(1e-2));
      tt::data::DataLoader ld(sorted, tt::data::DataLoaderOptions().batch_size(32).shuffle(shuffle).seed(0));
      for (int epoch = 0; epoch < 10; ++epoch) train_epoch(*m, opt, ld);
      tt::Tensor pred;
      {
        tt::NoGradGuard no_grad;
        m->eval();
        pred = m->forward(split.test->data()).argmax(1);
      }
      std::cout << "    shuffle(" << (shuffle ? "true) " : "false)") << " after 10 epochs: test accuracy "
                << fmt("%5.1f%%", 100 * (pred == split.test->targets()).to(tt::kFloat64).mean().item<double>())
                << ", predictions per class " << (pred == 0).sum().item<int64_t>() << " / "
                << (pred == 1).sum().item<int64_t>() << " / " << (pred == 2).sum().item<int64_t>() << "\n";
    }
  }
  say("Forgetting eval(). Add dropout (module 05) and evaluate the same trained model three times\n"
      "in training mode, then in eval mode:");
  {
    using namespace tt::nn;
    tt::manual_seed(0);
    auto m = std::make_shared<Model>(Linear(2, 128), ReLU(), Dropout(0.3), Linear(128, 128), ReLU(), Dropout(0.3),
                                     Linear(128, 3));
    tt::optim::Adam opt(m->parameters(), tt::optim::AdamOptions(1e-2));
    tt::data::DataLoader ld(split.train, tt::data::DataLoaderOptions().batch_size(32).shuffle(true).seed(0));
    for (int epoch = 0; epoch < 10; ++epoch) train_epoch(*m, opt, ld);
    tt::NoGradGuard no_grad;
    m->train();
    std::cout << "    train() mode:";
    for (int i = 0; i < 3; ++i) std::cout << fmt("  %.1f%%", 100 * accuracy(m->forward(split.test->data()), split.test->targets()));
    m->eval();
    std::cout << "\n    eval() mode: ";
    for (int i = 0; i < 3; ++i) std::cout << fmt("  %.1f%%", 100 * accuracy(m->forward(split.test->data()), split.test->targets()));
    std::cout << "\n";
  }
  say("In training mode dropout zeroes 30% of the hidden units afresh on every call, so the score\n"
      "is lower and changes from run to run. eval() turns it into the identity: one answer, the\n"
      "model's real one.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_08";
  w.begin = [] {
    std::cout << "Module 08 - training: the loop, datasets, the data loader, held-out accuracy,\n"
                 "checkpoints and resuming; milestone: an MLP that learns.\n";
    std::cout.precision(5);
  };
  w.steps = {
      {"1", "One step of the loop, every part named", step_1_one_step},
      {"2", "A Dataset maps an index to one example", step_2_dataset},
      {"3", "Batching: collate stacks examples along a new first dim", step_3_batching},
      {"4", "The DataLoader: epochs, batches, shuffling, drop_last", step_4_dataloader},
      {"5", "Held-out data: a train/test split, and statistics from the training part", step_5_held_out},
      {"6", "Overfitting: training accuracy is not the score", step_6_overfitting},
      {"7", "Batch size: steps per epoch and throughput", step_7_batch_size},
      {"8", "The milestone: an MLP learns three spirals", step_8_milestone},
      {"9", "Checkpoints: a state dict in a safetensors file", step_9_checkpoints},
      {"10", "Atomic save, validated load", step_10_atomic_save},
      {"11", "Resuming: model, optimizer, schedule and epoch", step_11_resuming},
      {"12", "Two pitfalls, measured", step_12_pitfalls},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/09_cuda, where the same loop runs on a GPU.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


