// Printing, compared with the exact strings PyTorch 1.13 prints for the same tensors (our dtype
// suffix reads `dtype=float64` where PyTorch writes `dtype=torch.float64`).
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace tt;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("print: fixed-point floats, right-aligned", "[core][print]") {
  CHECK(to_string(tensor({1.5, -2.25, 3.0})) == "tensor([ 1.5000, -2.2500,  3.0000])");
  CHECK(to_string(tensor({-0.5, 0.25})) == "tensor([-0.5000,  0.2500])");
  CHECK(to_string(tensor({{1.0, -2.5}, {3.0, 4.0}})) ==
        "tensor([[ 1.0000, -2.5000],\n"
        "        [ 3.0000,  4.0000]])");
  // The stream operator prints the same thing.
  std::ostringstream os;
  os << tensor({0.125});
  CHECK(os.str() == "tensor([0.1250])");
}

TEST_CASE("print: integral floats, ints and bools", "[core][print]") {
  CHECK(to_string(tensor({1., 2.})) == "tensor([1., 2.])");
  CHECK(to_string(zeros({3})) == "tensor([0., 0., 0.])");
  CHECK(to_string(tensor({{-1., 20.}, {3., 400.}})) ==
        "tensor([[ -1.,  20.],\n"
        "        [  3., 400.]])");
  CHECK(to_string(tensor({1, -20, 300})) == "tensor([  1, -20, 300])");
  CHECK(to_string(tensor({{1, 2}, {3, 40}})) ==
        "tensor([[ 1,  2],\n"
        "        [ 3, 40]])");
  CHECK(to_string(tensor({true, false, true})) == "tensor([ True, False,  True])");
}

TEST_CASE("print: dtype and requires_grad suffixes", "[core][print]") {
  CHECK(to_string(tensor({1.5, 2.0}, kFloat64)) == "tensor([1.5000, 2.0000], dtype=float64)");
  CHECK(to_string(tensor({1., 2.}, kFloat64)) == "tensor([1., 2.], dtype=float64)");
  CHECK(to_string(tensor({1., 2.}, requires_grad())) == "tensor([1., 2.], requires_grad=True)");
  CHECK(to_string(tensor({1., 2.}, TensorOptions(kFloat64).requires_grad(true))) ==
        "tensor([1., 2.], dtype=float64, requires_grad=True)");
}

TEST_CASE("print: suffixes move to their own line past 80 columns", "[core][print]") {
  // PyTorch decides with its longer "dtype=torch.float64"; we break at the same places.
  CHECK(to_string(tensor({435., 68., 320., 879., 668., -560., -1000., 314.}, kFloat64)) ==
        "tensor([  435.,    68.,   320.,   879.,   668.,  -560., -1000.,   314.],\n"
        "       dtype=float64)");
  CHECK(to_string((arange(12, kFloat64) * 1000.5).view({3, 4})) ==
        "tensor([[    0.0000,  1000.5000,  2001.0000,  3001.5000],\n"
        "        [ 4002.0000,  5002.5000,  6003.0000,  7003.5000],\n"
        "        [ 8004.0000,  9004.5000, 10005.0000, 11005.5000]], dtype=float64)");
  CHECK(to_string(arange(1., 23., 1., TensorOptions(kFloat64).requires_grad(true))) ==
        "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14.,\n"
        "        15., 16., 17., 18., 19., 20., 21., 22.], dtype=float64,\n"
        "       requires_grad=True)");
  CHECK(to_string(zeros({0, 3}, TensorOptions(kFloat64).requires_grad(true))) ==
        "tensor([], size=(0, 3), dtype=float64, requires_grad=True)");
}

TEST_CASE("print: 0-d tensors", "[core][print]") {
  CHECK(to_string(scalar_tensor(3.5)) == "tensor(3.5000)");
  CHECK(to_string(scalar_tensor(2.)) == "tensor(2.)");
  CHECK(to_string(scalar_tensor(7, kInt64)) == "tensor(7)");
  CHECK(to_string(scalar_tensor(true, kBool)) == "tensor(True)");
  CHECK(to_string(scalar_tensor(2.5, kFloat64)) == "tensor(2.5000, dtype=float64)");
  CHECK(to_string(ones({2, 2}).sum()) == "tensor(4.)");
}

TEST_CASE("print: empty tensors show their size and any non-float32 dtype", "[core][print]") {
  CHECK(to_string(zeros({0})) == "tensor([])");
  CHECK(to_string(zeros({0, 3})) == "tensor([], size=(0, 3))");
  CHECK(to_string(zeros({2, 0})) == "tensor([], size=(2, 0))");
  CHECK(to_string(zeros({0, 3}, kInt64)) == "tensor([], size=(0, 3), dtype=int64)");
  CHECK(to_string(zeros({0}, kFloat64)) == "tensor([], dtype=float64)");
  CHECK(to_string(zeros({0}, kBool)) == "tensor([], dtype=bool)");
}

TEST_CASE("print: 3-d tensors separate their matrices by a blank line", "[core][print]") {
  CHECK(to_string(arange(8.).reshape({2, 2, 2})) ==
        "tensor([[[0., 1.],\n"
        "         [2., 3.]],\n"
        "\n"
        "        [[4., 5.],\n"
        "         [6., 7.]]])");
  CHECK(to_string(arange(12).reshape({2, 3, 2})) ==
        "tensor([[[ 0,  1],\n"
        "         [ 2,  3],\n"
        "         [ 4,  5]],\n"
        "\n"
        "        [[ 6,  7],\n"
        "         [ 8,  9],\n"
        "         [10, 11]]])");
  // A non-contiguous view prints its logical order.
  CHECK(to_string(arange(6).reshape({2, 3}).t()) ==
        "tensor([[0, 3],\n"
        "        [1, 4],\n"
        "        [2, 5]])");
}

TEST_CASE("print: scientific notation when the range is wide", "[core][print]") {
  CHECK(to_string(tensor({1e-5, 1.0, 1e3})) == "tensor([1.0000e-05, 1.0000e+00, 1.0000e+03])");
  CHECK(to_string(tensor({1e10, 2.0})) == "tensor([1.0000e+10, 2.0000e+00])");
  CHECK(to_string(tensor({1e-5, 2e-5})) == "tensor([1.0000e-05, 2.0000e-05])");
  CHECK(to_string(tensor({-1e-5, 1e3})) == "tensor([-1.0000e-05,  1.0000e+03])");
  CHECK(to_string(tensor({123456789., 1.})) == "tensor([1.2346e+08, 1.0000e+00])");
}

TEST_CASE("print: nan and inf do not widen the other entries", "[core][print]") {
  CHECK(to_string(tensor({kNaN, 1.5, kInf})) == "tensor([   nan, 1.5000,    inf])");
  CHECK(to_string(tensor({kNaN, 1., -kInf})) == "tensor([nan, 1., -inf])");
  CHECK(to_string(tensor({kNaN, kInf})) == "tensor([nan, inf])");
}

TEST_CASE("print: long rows wrap at 80 columns", "[core][print]") {
  CHECK(to_string(arange(30.) / 3) ==
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
        "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n"
        "        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,\n"
        "        9.0000, 9.3333, 9.6667])");
  CHECK(to_string(arange(40)) ==
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
        "        36, 37, 38, 39])");
  CHECK(to_string(arange(20, kFloat64) * 1.5) ==
        "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
        "        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
        "        24.0000, 25.5000, 27.0000, 28.5000], dtype=float64)");
}

TEST_CASE("print: more than 1000 elements are summarized with ...", "[core][print]") {
  CHECK(to_string(arange(1001.)) == "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])");
  CHECK(to_string(arange(1001)) == "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
  CHECK(to_string(arange(1000.)).find("...") == std::string::npos);  // 1000 is not "more"
  // Only the shown corners are read: printing a 10M-element tensor copies none of it.
  Tensor huge = arange(10000000);
  memory::reset_peak_stats();
  CHECK(to_string(huge) == "tensor([      0,       1,       2,  ..., 9999997, 9999998, 9999999])");
  CHECK(memory::stats().peak_allocated_bytes - memory::stats().allocated_bytes < 4096);
  CHECK(to_string(arange(2000.).reshape({2, 1000})) ==
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
        "         9.9900e+02],\n"
        "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
        "         1.9990e+03]])");
  CHECK(to_string(arange(1100.).reshape({100, 11}) / 7) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.1429e+00, 1.2857e+00,\n"
        "         1.4286e+00],\n"
        "        [1.5714e+00, 1.7143e+00, 1.8571e+00,  ..., 2.7143e+00, 2.8571e+00,\n"
        "         3.0000e+00],\n"
        "        [3.1429e+00, 3.2857e+00, 3.4286e+00,  ..., 4.2857e+00, 4.4286e+00,\n"
        "         4.5714e+00],\n"
        "        ...,\n"
        "        [1.5243e+02, 1.5257e+02, 1.5271e+02,  ..., 1.5357e+02, 1.5371e+02,\n"
        "         1.5386e+02],\n"
        "        [1.5400e+02, 1.5414e+02, 1.5429e+02,  ..., 1.5514e+02, 1.5529e+02,\n"
        "         1.5543e+02],\n"
        "        [1.5557e+02, 1.5571e+02, 1.5586e+02,  ..., 1.5671e+02, 1.5686e+02,\n"
        "         1.5700e+02]])");
  CHECK(to_string(arange(1100).reshape({10, 10, 11})) ==
        "tensor([[[   0,    1,    2,  ...,    8,    9,   10],\n"
        "         [  11,   12,   13,  ...,   19,   20,   21],\n"
        "         [  22,   23,   24,  ...,   30,   31,   32],\n"
        "         ...,\n"
        "         [  77,   78,   79,  ...,   85,   86,   87],\n"
        "         [  88,   89,   90,  ...,   96,   97,   98],\n"
        "         [  99,  100,  101,  ...,  107,  108,  109]],\n"
        "\n"
        "        [[ 110,  111,  112,  ...,  118,  119,  120],\n"
        "         [ 121,  122,  123,  ...,  129,  130,  131],\n"
        "         [ 132,  133,  134,  ...,  140,  141,  142],\n"
        "         ...,\n"
        "         [ 187,  188,  189,  ...,  195,  196,  197],\n"
        "         [ 198,  199,  200,  ...,  206,  207,  208],\n"
        "         [ 209,  210,  211,  ...,  217,  218,  219]],\n"
        "\n"
        "        [[ 220,  221,  222,  ...,  228,  229,  230],\n"
        "         [ 231,  232,  233,  ...,  239,  240,  241],\n"
        "         [ 242,  243,  244,  ...,  250,  251,  252],\n"
        "         ...,\n"
        "         [ 297,  298,  299,  ...,  305,  306,  307],\n"
        "         [ 308,  309,  310,  ...,  316,  317,  318],\n"
        "         [ 319,  320,  321,  ...,  327,  328,  329]],\n"
        "\n"
        "        ...,\n"
        "\n"
        "        [[ 770,  771,  772,  ...,  778,  779,  780],\n"
        "         [ 781,  782,  783,  ...,  789,  790,  791],\n"
        "         [ 792,  793,  794,  ...,  800,  801,  802],\n"
        "         ...,\n"
        "         [ 847,  848,  849,  ...,  855,  856,  857],\n"
        "         [ 858,  859,  860,  ...,  866,  867,  868],\n"
        "         [ 869,  870,  871,  ...,  877,  878,  879]],\n"
        "\n"
        "        [[ 880,  881,  882,  ...,  888,  889,  890],\n"
        "         [ 891,  892,  893,  ...,  899,  900,  901],\n"
        "         [ 902,  903,  904,  ...,  910,  911,  912],\n"
        "         ...,\n"
        "         [ 957,  958,  959,  ...,  965,  966,  967],\n"
        "         [ 968,  969,  970,  ...,  976,  977,  978],\n"
        "         [ 979,  980,  981,  ...,  987,  988,  989]],\n"
        "\n"
        "        [[ 990,  991,  992,  ...,  998,  999, 1000],\n"
        "         [1001, 1002, 1003,  ..., 1009, 1010, 1011],\n"
        "         [1012, 1013, 1014,  ..., 1020, 1021, 1022],\n"
        "         ...,\n"
        "         [1067, 1068, 1069,  ..., 1075, 1076, 1077],\n"
        "         [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
        "         [1089, 1090, 1091,  ..., 1097, 1098, 1099]]])");
}

TEST_CASE("print: int64 values print exactly, past 2^53 and at the limits", "[core][print]") {
  // Through a double, 2^53 + 1 printed as 2^53, and INT64_MAX (rounded up to 2^63) as INT64_MIN.
  const int64_t big = (int64_t(1) << 53) + 1;
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  CHECK(to_string(tensor(std::vector<int64_t>{big})) == "tensor([9007199254740993])");
  CHECK(to_string(tensor(std::vector<int64_t>{max, min})) ==
        "tensor([ 9223372036854775807, -9223372036854775808])");
  Tensor scalar = zeros({}, kInt64);
  scalar.fill_(max);
  CHECK(to_string(scalar) == "tensor(9223372036854775807)");
  // Summarized rows read their edges exactly too.
  std::vector<int64_t> many(2000, max);
  many[0] = big;
  const std::string s = to_string(tensor(many));
  CHECK_THAT(s, Catch::StartsWith("tensor([   9007199254740993, 9223372036854775807, 9223372036854775807,"));
  CHECK(s.find("9223372036854775808") == std::string::npos);
}
