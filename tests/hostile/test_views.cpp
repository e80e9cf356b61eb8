// The hostile sweep through the view ops (Note [hostile sweep] in hostile.h): reshape targets,
// expand sizes, narrow/slice/select bounds and dims that are hostile, on small tensors and on
// views of 2^62 elements that own a single one.
#include "hostile.h"

#include <algorithm>
#include <optional>

using namespace tt;
using namespace tt::hostile;

namespace {

// Hostile numbers, plus the edges of a dim of size 24.
std::vector<int64_t> bounds() {
  std::vector<int64_t> v = kSizes;
  for (int64_t x : {2, 12, 23, 24, 25, -23, -24, -25}) v.push_back(x);
  return v;
}

// reshape's rule, independently: one -1 inferred against numel, every other size >= 0, and the
// element count equal to numel without wrapping around.
std::optional<Shape> reshaped(const Shape& target, int64_t numel) {
  int infer = -1;
  i128 known = 1;
  bool zero = false;
  for (int i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = i;
    } else if (target[i] < 0) {
      return std::nullopt;
    } else if (target[i] == 0) {
      zero = true;
    } else {
      known = known > (i128(1) << 100) / target[i] ? (i128(1) << 100) : known * target[i];  // saturates
    }
  }
  if (zero) known = 0;
  Shape out = target;
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) return std::nullopt;
    out[infer] = int64_t(numel / known);
    return out;
  }
  return known == numel ? std::optional<Shape>(out) : std::nullopt;
}

// Python's slice length for [start:end:step] over n elements (step > 0).
int64_t slice_length(int64_t n, int64_t start, int64_t end, int64_t step) {
  i128 s = start < 0 ? i128(start) + n : start, e = end < 0 ? i128(end) + n : end;
  s = std::min<i128>(std::max<i128>(s, 0), n);
  e = std::min<i128>(std::max<i128>(e, s), n);
  return int64_t((e - s + step - 1) / step);
}

}  // namespace

TEST_CASE("hostile: view and reshape to hostile shapes", "[hostile]") {
  Tensor t = arange(24);
  Tensor strided = arange(48).view({4, 12}).slice(1, 0, 12, 2);  // [4, 6], not contiguous
  for (Shape target : hostile_shapes()) {
    for (int k = 0; k < 2; ++k) {
      if (k == 1) target.insert(0, -1);  // the same shape with a leading -1 to infer
      std::optional<Shape> want = reshaped(target, 24);
      Expect e = want ? Expect::Ok : Expect::Error;
      auto check = [&](const Tensor& r) {
        has_shape(*want)(r);
        CHECK(r.flatten().to_vector<int64_t>() == t.to_vector<int64_t>());
      };
      run_case<Tensor>("view(" + describe(target) + ")", e, [&] { return t.view(target); }, check);
      run_case<Tensor>("reshape(" + describe(target) + ")", e, [&] { return t.reshape(target); }, check);
      run_case<Tensor>("strided reshape(" + describe(target) + ")", e, [&] { return strided.reshape(target); },
                       [&](const Tensor& r) { has_shape(*want)(r); });
      // An empty tensor accepts any shape with a 0 in it, however large the other sizes.
      std::optional<Shape> empty_want = reshaped(target, 0);
      run_case<Tensor>("empty reshape(" + describe(target) + ")", empty_want ? Expect::Ok : Expect::Error,
                       [&] { return zeros({0}).reshape(target); }, [&](const Tensor& r) { has_shape(*empty_want)(r); });
    }
  }
}

TEST_CASE("hostile: expand to hostile sizes (views allocate nothing, so every size class runs)", "[hostile]") {
  Tensor one = ones({1, 1});
  for (const Shape& target : hostile_shapes()) {
    if (target.size() != 2) continue;
    // -1 keeps the existing size (1); any other negative size is an error, as is a count past int64.
    Shape want = target;
    for (int i = 0; i < want.size(); ++i)
      if (want[i] == -1) want[i] = 1;
    i128 n = count(want);
    Expect e = n < 0 || n > kMax ? Expect::Error : Expect::Ok;
    bool made = run_case<Tensor>("expand(" + describe(target) + ")", e, [&] { return one.expand(target); },
                                 [&](const Tensor& r) {
                                   has_shape(want)(r);
                                   for (int i = 0; i < 2; ++i) CHECK(r.stride(i) == (want[i] == 1 ? 1 : 0));
                                 });
    // A new leading dim may not be -1; a valid one multiplies the count.
    Shape lead = {target[0], 1, 1};
    i128 m = count(lead);
    run_case<Tensor>("expand(" + describe(lead) + ")", m < 0 || m > kMax ? Expect::Error : Expect::Ok,
                     [&] { return ones({1, 1}).expand(lead); }, has_shape(lead));
    (void)made;
  }
}

TEST_CASE("hostile: narrow, slice and select with hostile bounds", "[hostile]") {
  Tensor t = arange(24);
  const std::vector<int64_t> b = bounds();
  for (int64_t start : b) {
    // select: index in [-24, 24).
    Expect sel = start >= -24 && start < 24 ? Expect::Ok : Expect::Error;
    run_case<Tensor>("select(0, " + std::to_string(start) + ")", sel, [&] { return t.select(0, start); },
                     [&](const Tensor& r) { CHECK(r.item<int64_t>() == (start < 0 ? start + 24 : start)); });
    for (int64_t length : b) {
      // narrow: start in [-24, 24], then 0 <= length <= 24 - start.
      int64_t s = start < 0 ? start + 24 : start;
      bool ok = start >= -24 && start <= 24 && length >= 0 && length <= 24 - s;
      run_case<Tensor>("narrow(0, " + std::to_string(start) + ", " + std::to_string(length) + ")",
                       ok ? Expect::Ok : Expect::Error, [&] { return t.narrow(0, start, length); },
                       [&](const Tensor& r) {
                         has_shape({length})(r);
                         if (length > 0) CHECK(r.to_vector<int64_t>()[0] == s);
                       });
    }
    for (int64_t end : b)
      for (int64_t step : {int64_t(1), int64_t(5), int64_t(1) << 31, int64_t(1) << 62, kMax, int64_t(0), int64_t(-1),
                           kMin}) {
        std::ostringstream what;
        what << "slice(0, " << start << ", " << end << ", " << step << ")";
        Expect e = step > 0 ? Expect::Ok : Expect::Error;
        run_case<Tensor>(what.str(), e, [&] { return t.slice(0, start, end, step); }, [&](const Tensor& r) {
          int64_t n = slice_length(24, start, end, step);
          has_shape({n})(r);
          if (n > 0) {
            int64_t first = std::min<int64_t>(std::max<int64_t>(start < 0 ? start + 24 : start, 0), 24);
            CHECK(r.to_vector<int64_t>()[0] == first);
          }
        });
      }
  }
}

TEST_CASE("hostile: views of 2^62 elements over one stored element", "[hostile]") {
  const int64_t big = int64_t(1) << 62;
  Tensor e = ones({1}, kInt64).expand({big});
  CHECK(e.numel() == big);
  CHECK(e.select(0, big - 1).item<int64_t>() == 1);
  CHECK(e.select(0, -big).item<int64_t>() == 1);
  REQUIRE_THROWS_AS(e.select(0, big), IndexError);
  CHECK(e.narrow(0, big - 2, 2).numel() == 2);
  REQUIRE_THROWS_AS(e.narrow(0, 2, kMax), IndexError);
  CHECK(e.slice(0, 0, kMax, int64_t(1) << 61).numel() == 2);
  CHECK(e.unsqueeze(0).expand({1, big}).numel() == big);
  REQUIRE_THROWS_AS(e.unsqueeze(0).expand({2, big}), ShapeError);  // 2^63 elements
  CHECK(e.view({2, big / 2}).shape() == Shape{2, big / 2});
  REQUIRE_THROWS_AS(e.view({4, big}), ShapeError);
  // Anything that would materialize it is refused before allocating: 2^62 int64 is 2^65 bytes.
  REQUIRE_THROWS_AS(e.contiguous(), ShapeError);
  REQUIRE_THROWS_AS(e + 1, ShapeError);
  REQUIRE_THROWS_AS(cat({e, e}), ShapeError);
}

TEST_CASE("hostile: dims out of range in every op that takes one", "[hostile]") {
  Tensor t = arange(24, kFloat32).view({2, 3, 4});
  for (int64_t d : bounds()) {
    const bool ok = d >= -3 && d < 3, ok_new = d >= -4 && d < 4;  // unsqueeze and stack add a dim
    const Expect e = ok ? Expect::Ok : Expect::Error, e_new = ok_new ? Expect::Ok : Expect::Error;
    const std::string ds = std::to_string(d);
    run_case<Tensor>("unsqueeze(" + ds + ")", e_new, [&] { return t.unsqueeze(d); });
    run_case<Tensor>("stack(" + ds + ")", e_new, [&] { return stack({t, t}, d); });
    run_case<Tensor>("squeeze(" + ds + ")", e, [&] { return t.squeeze(d); });
    run_case<Tensor>("transpose(0, " + ds + ")", e, [&] { return t.transpose(0, d); });
    run_case<Tensor>("flatten(" + ds + ")", e, [&] { return t.flatten(d); });
    run_case<Tensor>("sum(" + ds + ")", e, [&] { return t.sum(d); });
    run_case<Tensor>("mean(" + ds + ")", e, [&] { return t.mean(d); });
    run_case<Tensor>("amax(" + ds + ")", e, [&] { return t.amax(d); });
    run_case<Tensor>("var(" + ds + ")", e, [&] { return var(t, d); });
    run_case<Tensor>("argmax(" + ds + ")", e, [&] { return argmax(t, d); });
    run_case<Tensor>("softmax(" + ds + ")", e, [&] { return softmax(t, d); });
    run_case<Tensor>("log_softmax(" + ds + ")", e, [&] { return log_softmax(t, d); });
    run_case<Tensor>("cat(" + ds + ")", e, [&] { return cat({t, t}, d); });
    run_case<Tensor>("index_select(" + ds + ")", e, [&] { return index_select(t, d, tensor({0}, kInt64)); });
    run_case<Tensor>("permute(0, 1, " + ds + ")", d == 2 || d == -1 ? Expect::Ok : Expect::Error,
                     [&] { return t.permute({0, 1, d}); });
  }
}

TEST_CASE("hostile: split and chunk into hostile pieces", "[hostile]") {
  Tensor t = arange(24);
  for (int64_t n : bounds()) {
    const std::string ns = std::to_string(n);
    // split_size 0 is valid only for an empty dim (PyTorch); chunks must be > 0.
    run_case<std::vector<Tensor>>("split(" + ns + ")", n > 0 ? Expect::Ok : Expect::Error,
                                  [&] { return split(t, n); }, [&](const std::vector<Tensor>& parts) {
                                    int64_t total = 0;
                                    for (const Tensor& p : parts) total += p.numel();
                                    CHECK(total == 24);
                                    CHECK(int64_t(parts.size()) == (n >= 24 ? 1 : (24 + n - 1) / n));
                                  });
    run_case<std::vector<Tensor>>("chunk(" + ns + ")", n > 0 ? Expect::Ok : Expect::Error,
                                  [&] { return chunk(t, n); }, [&](const std::vector<Tensor>& parts) {
                                    int64_t total = 0;
                                    for (const Tensor& p : parts) total += p.numel();
                                    CHECK(total == 24);
                                    CHECK(int64_t(parts.size()) <= std::min<int64_t>(n, 24));
                                  });
  }
}
