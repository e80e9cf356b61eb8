// Printing tensors the way PyTorch does:
//   tensor([[ 1.0000, -2.5000],
//           [ 3.0000,  4.0000]], dtype=float64)
// One format for all elements (fixed with 4 decimals, integral floats as "1.", scientific when
// the range is wide), right-aligned to one width; rows wrap at 80 columns; tensors of more than
// 1000 elements show the first and last 3 entries of each long dim around "...".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tinytorch/autograd/node.h"
#include "tinytorch/core/tensor.h"

namespace tt {

namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

// One element as printed: its value as a double (floats, bools), and exactly for int64, whose values
// past 2^53 a double would round (and INT64_MAX, rounded up to 2^63, would wrap to INT64_MIN).
struct Value {
  double d = 0;
  int64_t i = 0;
};

// The values of a 1-d tensor, or of a 0-d one.
std::vector<Value> values_of(const Tensor& row) {
  std::vector<Value> out;
  if (row.dtype() == kInt64) {
    for (int64_t v : row.to_vector<int64_t>()) out.push_back({double(v), v});
  } else {
    for (double v : row.to_vector<double>()) out.push_back({v, 0});
  }
  return out;
}
Value item_of(const Tensor& t) {
  return t.dtype() == kInt64 ? Value{t.item<double>(), t.item<int64_t>()} : Value{t.item<double>(), 0};
}

struct Formatter {
  ScalarType dtype;
  bool int_mode = true;  // floats that are all integral print as "3."
  bool sci_mode = false;
  int width = 1;

  std::string format(const Value& value) const {
    char buf[64];
    const double v = value.d;
    if (dtype == kBool) return v != 0 ? "True" : "False";
    if (dtype == kInt64) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value.i));
      return buf;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_mode) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (int_mode) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
  std::string padded(const Value& v) const {
    std::string s = format(v);
    return std::string(size_t(std::max<int>(0, width - int(s.size()))), ' ') + s;
  }
};

// The values a printout shows (all, or the summarized edges), in row-major order.
// The values a 1-d row shows: all of them, or only the first and last kEdgeItems when it is
// cut (read through slices, so printing a huge tensor never copies all of it).
std::vector<Value> shown_values(const Tensor& row, bool cut) {
  if (!cut) return values_of(row);
  int64_t n = row.size(0);
  std::vector<Value> v = values_of(row.slice(0, 0, kEdgeItems));
  std::vector<Value> tail = values_of(row.slice(0, n - kEdgeItems, n));
  v.insert(v.end(), tail.begin(), tail.end());
  return v;
}

void collect(const Tensor& t, bool summarize, std::vector<Value>& out) {
  if (t.dim() == 0) {
    out.push_back(item_of(t));
    return;
  }
  int64_t n = t.size(0);
  if (t.dim() == 1) {
    std::vector<Value> vals = shown_values(t, summarize && n > 2 * kEdgeItems);
    out.insert(out.end(), vals.begin(), vals.end());
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    collect(t.select(0, i), summarize, out);
  }
}

Formatter make_formatter(const Tensor& t, bool summarize) {
  Formatter f{t.dtype()};
  std::vector<Value> vals;
  if (t.numel() > 0) collect(t, summarize, vals);
  if (t.is_floating_point()) {
    std::vector<double> finite;
    for (const Value& v : vals)
      if (std::isfinite(v.d)) finite.push_back(v.d);
    for (double v : finite)
      if (std::ceil(v) != v) f.int_mode = false;
    double mx = 0, mn = INFINITY;
    for (double v : finite)
      if (v != 0) {
        mx = std::max(mx, std::fabs(v));
        mn = std::min(mn, std::fabs(v));
      }
    if (!finite.empty() && mx > 0) {
      if (f.int_mode) {
        f.sci_mode = mx / mn > 1000.0 || mx > 1e8;
      } else {
        f.sci_mode = mx / mn > 1000.0 || mx > 1e8 || mn < 1e-4;
      }
    }
  }
  // As PyTorch: a float's width comes from its nonzero finite values only, so "nan", "inf"
  // and "0." never widen the other entries.
  for (const Value& v : vals)
    if (!t.is_floating_point() || (std::isfinite(v.d) && v.d != 0))
      f.width = std::max<int>(f.width, int(f.format(v).size()));
  return f;
}

void print_rec(std::ostream& os, const Tensor& t, const Formatter& f, bool summarize, int indent) {
  if (t.dim() == 0) {
    os << f.format(item_of(t));
    return;
  }
  int64_t n = t.size(0);
  bool cut = summarize && n > 2 * kEdgeItems;
  if (t.dim() == 1) {
    // The entries (with " ..." standing in for the elided middle, counted as one entry), then
    // as many per line as fit in 80 columns, joined by ", ".
    std::vector<Value> vals = shown_values(t, cut);
    std::vector<std::string> items;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (cut && i == size_t(kEdgeItems)) items.push_back(" ...");
      items.push_back(f.padded(vals[i]));
    }
    size_t per_line = size_t(std::max(1, (kLineWidth - indent) / (f.width + 2)));
    os << '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) os << (i % per_line == 0 ? ",\n" + std::string(size_t(indent + 1), ' ') : ", ");
      os << items[i];
    }
    os << ']';
    return;
  }
  os << '[';
  std::string sep = "," + std::string(size_t(t.dim() - 1), '\n') + std::string(size_t(indent + 1), ' ');
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) os << sep;
    if (cut && i == kEdgeItems) {
      os << "..." << sep;
      i = n - kEdgeItems;
    }
    print_rec(os, t.select(0, i), f, summarize, indent + 1);
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ undefined tensor ]";
  Tensor c = t.device().is_cpu() ? t : t.cpu();
  bool summarize = c.numel() > kThreshold;
  std::ostringstream body;
  const std::string prefix = "tensor(";
  std::vector<std::string> suffixes;
  if (c.numel() == 0 && c.dim() != 1) {
    body << "[]";
    std::ostringstream sz;
    sz << "size=(";
    for (int d = 0; d < c.dim(); ++d) sz << (d ? ", " : "") << c.size(d);
    sz << (c.dim() == 1 ? ",)" : ")");
    suffixes.push_back(sz.str());
  } else {
    Formatter f = make_formatter(c, summarize);
    print_rec(body, c, f, summarize, int(prefix.size()));
  }
  if (t.device().is_cuda()) suffixes.push_back("device='" + t.device().str() + "'");
  // float32, int64 and bool show no dtype, except in an empty tensor, where no value tells
  // an int64 from a float32 (PyTorch's rule).
  bool default_dtype = c.numel() == 0 ? t.dtype() == kFloat32
                                      : t.dtype() == kFloat32 || t.dtype() == kInt64 || t.dtype() == kBool;
  if (!default_dtype) suffixes.push_back(std::string("dtype=") + dtype_name(t.dtype()));
  if (t.grad_fn()) {
    suffixes.push_back("grad_fn=<" + t.grad_fn()->name() + ">");
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  // Suffixes follow on the last line while it stays within 80 columns, else on a new line
  // indented like the data. `last` mirrors PyTorch's count, which runs 2 over the line length,
  // and a dtype suffix counts as PyTorch's longer "dtype=torch.float64", so that lines break
  // exactly where PyTorch breaks them.
  std::string out = prefix + body.str();
  size_t nl = out.rfind('\n');
  int64_t last = int64_t(out.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const std::string& s : suffixes) {
    int64_t torch_len = int64_t(s.size()) + (s.rfind("dtype=", 0) == 0 ? 6 : 0);
    if (last + torch_len + 2 > kLineWidth) {
      out += ",\n" + std::string(prefix.size(), ' ') + s;
      last = int64_t(prefix.size()) + torch_len;
    } else {
      out += ", " + s;
      last += torch_len + 2;
    }
  }
  return os << out << ')';
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace tt
