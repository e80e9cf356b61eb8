// Names, sizes and promotion of dtypes.
#include "tinytorch/core/dtype.h"

#include "tinytorch/core/error.h"

namespace tt {

namespace {
constexpr const char* kNames[] = {"float32", "float64", "int64", "bool", "bfloat16"};
constexpr size_t kSizes[] = {4, 8, 8, 1, 2};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(ScalarType::NumTypes),
              "every ScalarType needs a name");
static_assert(sizeof(kSizes) / sizeof(kSizes[0]) == size_t(ScalarType::NumTypes),
              "every ScalarType needs a size");
}  // namespace

const char* dtype_name(ScalarType t) {
  TT_CHECK_DTYPE(t < ScalarType::NumTypes, "dtype_name: invalid dtype ", int(t));
  return kNames[size_t(t)];
}
size_t element_size(ScalarType t) {
  TT_CHECK_DTYPE(t < ScalarType::NumTypes, "element_size: invalid dtype ", int(t));
  return kSizes[size_t(t)];
}
std::ostream& operator<<(std::ostream& os, ScalarType t) {
  return os << (t < ScalarType::NumTypes ? kNames[size_t(t)] : "invalid");
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  // Rank: bool 0, int64 1, bfloat16 2, float32 3, float64 4.
  auto rank = [](ScalarType t) {
    switch (t) {
      case kBool: return 0;
      case kInt64: return 1;
      case kBFloat16: return 2;
      case kFloat32: return 3;
      default: return 4;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace tt
