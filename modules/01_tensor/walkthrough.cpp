// Module 01 walkthrough: a tensor is a block of storage plus (offset, shape, strides, dtype).
// Run it with `tools/tt walkthrough 01` (or build-*/modules/walkthrough_01). Every step prints
// the code it runs (after ">>>") and what came out, as a notebook would. Read it beside
// modules/01_tensor/README.md; this file teaches by showing, the README by explaining. Each
// numbered section is one function; `--step N` reruns section N alone, `--list` lists them.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// The metadata that makes a tensor: where it starts in its storage and how to step through it.
std::string layout(const tt::Tensor& t) {
  std::ostringstream os;
  os << "shape " << t.shape() << "  strides " << t.strides() << "  offset " << t.storage_offset()
     << "  contiguous " << (t.is_contiguous() ? "yes" : "no") << "  dtype " << t.dtype();
  return os.str();
}
#define LAYOUT(t) std::cout << "    " << #t << ": " << layout(t) << "\n"

bool same_storage(const tt::Tensor& a, const tt::Tensor& b) { return a.storage().get() == b.storage().get(); }

// Draws a float32 tensor's whole storage and, under each slot, how many elements of `t` read it
// (blank: not read; 1: read once; 3: read three times, which is what stride 0 looks like).
void draw_storage(const char* name, const tt::Tensor& t) {
  const auto* data = static_cast<const float*>(t.storage()->data);
  const int64_t slots = int64_t(t.storage()->nbytes / sizeof(float));
  std::vector<int> reads(size_t(slots), 0);
  std::vector<int64_t> idx(size_t(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t pos = t.storage_offset();
    for (int d = 0; d < t.dim(); ++d) pos += idx[size_t(d)] * t.stride(d);
    ++reads[size_t(pos)];
    for (int d = t.dim() - 1; d >= 0; --d) {  // odometer over the view's indices
      if (++idx[size_t(d)] < t.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
  std::ostringstream top, bottom;
  for (int64_t i = 0; i < slots; ++i) {
    top << std::setw(4) << data[i];
    bottom << std::setw(4) << (reads[size_t(i)] ? std::to_string(reads[size_t(i)]) : "");
  }
  std::cout << "    storage      :" << top.str() << "\n"
            << "    reads by " << std::left << std::setw(4) << name << std::right << ":" << bottom.str()
            << "\n";
}

std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

void print_stats(const char* when) {
  tt::MemoryStats s = tt::memory::stats();
  std::cout << "    [" << when << "] allocated " << mib(s.allocated_bytes) << ", peak "
            << mib(s.peak_allocated_bytes) << ", reserved " << mib(s.reserved_bytes) << ", allocs "
            << s.num_allocs << " (from the system: " << s.num_system_allocs << ")\n";
}

// -----------------------------------------------------------------------------------------------

void step_1_creating_tensors() {
  say("Factories make tensors from nothing; tt::tensor makes one from values you type.");
  SHOW(tt::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  SHOW(tt::zeros({2, 3}));
  SHOW(tt::arange(6));
  SHOW(tt::linspace(0, 1, 5));
  SHOW(tt::eye(3));
  SHOW(tt::full({2, 2}, 7.5));
  RUN(tt::manual_seed(0));
  SHOW(tt::randn({2, 3}));
  say("Same seed, same numbers (the generator is counter based, so thread count does not matter):");
  RUN(tt::manual_seed(0));
  SHOW(tt::randn({2, 3}));
}

// -----------------------------------------------------------------------------------------------

void step_2_dtype_element() {
  say("Floating literals give float32, integer literals int64, bool literals bool, as in PyTorch.");
  SHOW(tt::tensor({1.5, 2.5}).dtype());
  SHOW(tt::tensor({1, 2}).dtype());
  SHOW(tt::tensor({true, false}).dtype());
  SHOW(tt::arange(3).dtype());
  SHOW(tt::tensor({1.5, 2.5}).to(tt::kFloat64));
  SHOW(tt::tensor({1.9, -1.9}).to(tt::kInt64));
  say("Bytes per element: float32 4, float64 8, int64 8, bool 1.");
  SHOW(tt::zeros({1}, tt::kFloat32).element_size());
  SHOW(tt::zeros({1}, tt::kFloat64).element_size());
  SHOW(tt::zeros({1}, tt::kBool).element_size());
}

// -----------------------------------------------------------------------------------------------

// Returns x, which steps 4, 5 and 8 read again.
tt::Tensor step_3_storage() {
  say("A tensor is a view of a flat block of memory, the storage. Element [i, j] lives at\n"
      "    storage[offset + i * stride[0] + j * stride[1]]\n"
      "Strides count elements, not bytes. A fresh tensor is contiguous: row-major, last stride 1.");
  RUN(tt::Tensor x = tt::arange(12, tt::kFloat32).view({3, 4}));
  SHOW(x);
  LAYOUT(x);
  draw_storage("x", x);
  say("Reading x[1][2] by hand, with the formula, from the raw pointer:");
  RUN(const float* p = x.data_ptr<float>());
  SHOW(p[x.storage_offset() + 1 * x.stride(0) + 2 * x.stride(1)]);
  SHOW(x[1][2].item<float>());
  return x;
}

// -----------------------------------------------------------------------------------------------

void step_4_views() {
  const tt::Tensor x = quietly(step_3_storage);
  say("transpose swaps two strides. Nothing moves; the same storage is read in another order.");
  RUN(tt::Tensor xt = x.t());
  SHOW(xt);
  LAYOUT(xt);
  SHOW(same_storage(x, xt));

  say("slice(dim, start, end, step) moves the offset to `start` and multiplies the stride by\n"
      "`step`. Columns 1 and 3 of every row:");
  RUN(tt::Tensor cols = x.slice(1, 1, 4, 2));
  SHOW(cols);
  LAYOUT(cols);
  draw_storage("cols", cols);

  say("select(dim, i) drops a dim and moves the offset: row 2 starts at element 8.");
  RUN(tt::Tensor row = x.select(0, 2));
  SHOW(row);
  LAYOUT(row);

  say("unsqueeze adds a size-1 dim; permute reorders dims (and their strides).");
  RUN(tt::Tensor cube = tt::arange(24, tt::kFloat32).view({2, 3, 4}));
  LAYOUT(cube);
  RUN(tt::Tensor perm = cube.permute({2, 0, 1}));
  LAYOUT(perm);
  RUN(tt::Tensor unsq = x.unsqueeze(1));
  LAYOUT(unsq);

  say("expand repeats a size-1 dim without copying: its stride becomes 0, so every index along\n"
      "it lands on the same element. Here one row of 4 pretends to be 3 rows:");
  RUN(tt::Tensor first_row = x.slice(0, 0, 1));
  RUN(tt::Tensor rep = first_row.expand({3, 4}));
  SHOW(rep);
  LAYOUT(rep);
  draw_storage("rep", rep);

  say("A view shares its storage, so writing through a view writes into x. Every in-place write\n"
      "bumps the storage's version counter (autograd uses it later to catch stale saved tensors).");
  RUN(tt::Tensor y = x.clone());
  SHOW(y.version());
  RUN(y.select(1, 0).fill_(-1));
  SHOW(y);
  SHOW(y.version());
}

// -----------------------------------------------------------------------------------------------

void step_5_view_reshape() {
  const tt::Tensor x = quietly(step_3_storage), xt = x.t();  // step 4's xt
  say("view() never copies: it fails when the strides cannot express the new shape. A transposed\n"
      "matrix cannot be flattened without reordering memory:");
  SHOW_ERROR(xt.view({12}));
  say("reshape() returns a view when it can, and a copy when it must:");
  RUN(tt::Tensor flat_view = x.reshape({12}));
  SHOW(same_storage(flat_view, x));
  RUN(tt::Tensor flat_copy = xt.reshape({12}));
  SHOW(same_storage(flat_copy, x));
  SHOW(flat_copy);
  say("contiguous() is free on a contiguous tensor (it returns the very same handle) and a copy\n"
      "otherwise:");
  SHOW(x.contiguous().is_same(x));
  RUN(tt::Tensor xtc = xt.contiguous());
  SHOW(xtc.is_same(xt));
  LAYOUT(xtc);
  say("Not every non-contiguous view blocks view(): a slice of whole rows can still be split.");
  RUN(tt::Tensor two_rows = x.slice(0, 1, 3));
  SHOW(two_rows.view({2, 2, 2}));
}

// -----------------------------------------------------------------------------------------------

void step_6_broadcasting() {
  say("Shapes are lined up from the right; each pair of sizes must match or one must be 1, and\n"
      "size-1 (or missing) dims stretch. [3, 1] + [1, 4] -> [3, 4]:");
  RUN(tt::Tensor col = tt::tensor({0.0, 10.0, 20.0}).unsqueeze(1));
  RUN(tt::Tensor rowv = tt::tensor({{1.0, 2.0, 3.0, 4.0}}));
  SHOW(col + rowv);
  say("The kernel reads `col` as if expanded, with stride 0 along the stretched dim:");
  RUN(tt::Tensor col_b = col.expand({3, 4}));
  LAYOUT(col_b);
  say("A bias over the last dim of a batch: [2, 3, 4] + [4].");
  RUN(tt::Tensor batch = tt::ones({2, 3, 4}));
  SHOW((batch + tt::tensor({0.0, 0.1, 0.2, 0.3}))[1]);
  say("Sizes that are neither equal nor 1 are an error, with the shapes in the message:");
  SHOW_ERROR(tt::ones({3}) + tt::ones({4}));
}

// -----------------------------------------------------------------------------------------------

void step_7_elementwise() {
  RUN(tt::Tensor a = tt::tensor({1.0, 4.0, 9.0}));
  SHOW(a.sqrt());
  SHOW(a * 2 - 1);
  SHOW(a.pow(0.5) == a.sqrt());
  SHOW(a.maximum(tt::tensor({3.0, 3.0, 3.0})));
  say("int64 with a float scalar becomes float32 (the default float), not float64:");
  SHOW(tt::tensor({1, 2, 3}) + 0.5);
  say("`/` is true division: two integers give float32. (There is no floor division here.)");
  SHOW(tt::tensor({7, 8}) / 2);
  say("A dimensioned tensor decides the dtype over a 0-d tensor of the same category:");
  SHOW((tt::ones({2}) + tt::scalar_tensor(1.0, tt::kFloat64)).dtype());
  SHOW((tt::ones({2}) + tt::ones({2}, tt::kFloat64)).dtype());
  say("Comparisons give bool tensors:");
  SHOW(a > 2.0);
  say("In-place ops write into the tensor. They refuse to write into an expanded view, whose\n"
      "elements alias each other:");
  RUN(tt::Tensor acc = tt::zeros({4}));
  RUN(acc.add_(tt::ones({4}), 2));
  SHOW(acc);
  RUN(tt::Tensor aliased = tt::zeros({1, 4}).expand({3, 4}));
  SHOW_ERROR(aliased.add_(1.0));
  say("...and to store a float result in an integer tensor:");
  RUN(tt::Tensor ints = tt::tensor({1, 2}));
  SHOW_ERROR(ints.add_(0.5));
}

// -----------------------------------------------------------------------------------------------

void step_8_reductions() {
  const tt::Tensor xt = quietly(step_3_storage).t();  // step 4's xt
  RUN(tt::Tensor m = tt::tensor({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}}));
  SHOW(m.sum());
  SHOW(m.sum({0}));
  SHOW(m.sum({1}, /*keepdim=*/true));
  SHOW(m.mean({1}));
  RUN(auto [values, indices] = m.max(1));
  SHOW(values);
  SHOW(indices);
  SHOW(m.argmax());
  SHOW(m.var({1}));
  SHOW(m.var({1}, /*correction=*/0));
  say("Reductions read views in place: the column sums of x are the row sums of x.t().");
  SHOW(xt.sum({1}));
  say("Summing bools counts them (the result is int64):");
  SHOW((m > 2.5).sum());

  say("Float32 has a 24-bit mantissa. Adding 0.1 a million times into ONE float32 accumulator\n"
      "loses more and more of each addend as the total grows. tt::sum adds pairs in float32 and\n"
      "runs of them in 32 float64 lanes (blocks of 4096), then combines the block sums in float64.");
  RUN(std::vector<float> tenths(1000000, 0.1f));
  RUN(float naive = 0.0f; for (float v : tenths) naive += v);
  RUN(tt::Tensor tenths_t = tt::from_blob(tenths.data(), {int64_t(tenths.size())}));
  std::cout << std::setprecision(10);
  SHOW(naive);
  SHOW(tenths_t.sum().item<double>());
  SHOW(1000000 * double(0.1f));
  std::cout << std::setprecision(6);
  say("(from_blob wrapped the vector's memory: no copy, and the vector must outlive the tensor.)");
}

// -----------------------------------------------------------------------------------------------

void step_9_printing() {
  say("Floats that are all whole print as \"3.\", others with 4 decimals, wide ranges in\n"
      "scientific notation; float64 and requires_grad add a suffix; more than 1000 elements are\n"
      "summarized to the first and last three entries of each dim.");
  SHOW(tt::tensor({1.0, 2.0, 3.0}));
  SHOW(tt::tensor({0.5, -1.25, 3.0}));
  SHOW(tt::tensor({1e-6, 1.0, 1e6}));
  SHOW(tt::tensor({1.0, 2.0}, tt::kFloat64));
  SHOW(tt::tensor({true, false}));
  SHOW(tt::arange(2000).view({40, 50}));
}

// -----------------------------------------------------------------------------------------------

void step_10_memory() {
  say("Every CPU tensor's bytes come from a caching allocator that rounds sizes up to 64 bytes and\n"
      "keeps freed blocks for reuse. tt::memory::stats() reports what it holds.");
  tt::memory::empty_cache();
  tt::memory::reset_peak_stats();
  print_stats("start");
  RUN(tt::Tensor big = tt::zeros({1024, 1024}));
  print_stats("after zeros({1024, 1024}), 4 MiB");
  RUN(tt::Tensor big_view = big.t().slice(0, 0, 512));
  print_stats("after a transpose and a slice: views allocate nothing");
  RUN(tt::Tensor big_copy = big.t().contiguous());
  print_stats("after t().contiguous(): a real copy");
  RUN(big_copy = tt::Tensor());
  print_stats("after dropping the copy: its block is cached, still reserved");
  RUN(tt::memory::reset_peak_stats());
  print_stats("after reset_peak_stats: the peak restarts from the current bytes");
  RUN(tt::Tensor again = tt::empty({1024, 1024}));
  print_stats("a same-sized tensor reuses the cached block: no new system allocation");
  say("The attention lessons read peak_allocated_bytes the same way, to watch a [T, T] score\n"
      "matrix grow with the square of the sequence length.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_01";
  w.begin = [] {
    std::cout << "Module 01 - tensors: storage, dtype, shape and strides, views, broadcasting,\n"
                 "elementwise ops, reductions, printing and memory statistics.\n";
  };
  w.steps = {
      {"1", "Creating tensors", step_1_creating_tensors},
      {"2", "dtype: what one element is", step_2_dtype_element},
      {"3", "Storage, offset, shape, strides", step_3_storage},
      {"4", "Views change metadata, never data", step_4_views},
      {"5", "view vs reshape, and when contiguous() copies", step_5_view_reshape},
      {"6", "Broadcasting: stride 0 instead of copies", step_6_broadcasting},
      {"7", "Elementwise ops and type promotion", step_7_elementwise},
      {"8", "Reductions", step_8_reductions},
      {"9", "Printing", step_9_printing},
      {"10", "Memory statistics", step_10_memory},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << std::fixed << std::setprecision(2) << secs << " s. Next: modules/02_matmul.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}

