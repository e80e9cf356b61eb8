// Printing against PyTorch's str(tensor) (print.json). The one deliberate difference: we print
// `dtype=float64` where PyTorch prints `dtype=torch.float64`, so "torch." is dropped from
// PyTorch's text before comparing. Everything else (widths, 4 decimals, "1." for integral
// floats, scientific notation, summarizing with "...", line wrapping, empty sizes) must match.
#include "reference/reference_util.h"

using namespace tt;

namespace {

std::string drop_torch_prefix(std::string s) {
  const std::string from = "dtype=torch.", to = "dtype=";
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("reference: printing matches PyTorch's str(tensor)", "[reference]") {
  size_t count = 0;
  tt::reference::for_each_case("print", [&](const tt::reference::json& c) {
    ++count;
    std::vector<tt::reference::Input> in = tt::reference::make_inputs(c.at("inputs"));
    std::string want = drop_torch_prefix(c.at("expected_str").get<std::string>());
    std::string got = tt::to_string(in[0].value);
    INFO("tinytorch:\n" << got << "\nPyTorch:\n" << want);
    CHECK(got == want);
  });
  CHECK(count > 10);
}
