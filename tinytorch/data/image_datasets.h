// Real image datasets read from the files Debian packages install: scikit-learn's 8×8 handwritten
// digits (python3-sklearn) and Fashion-MNIST (dataset-fashion-mnist), plus the IDX reader under
// the latter. Nothing is downloaded: a missing file is an error that names the package to install.
//
//   auto train = tt::data::load_fashion_mnist(tt::data::Split::kTrain);   // 60000 images
//   auto ds = std::make_shared<tt::data::TensorDataset>(train.images, train.labels);
//
// Files may be gzip-compressed or not; gzip is recognised by its magic bytes (1f 8b), not by the
// name. Every loader validates the whole file before it returns, and throws tt::IOError naming
// the file and the rule it breaks (missing, truncated, wrong magic, counts that disagree, a label
// or pixel out of range): nothing is ever half loaded. Deliberately left out: downloading,
// augmentation, lazy (per-example) reading — these sets fit in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinytorch/core/dtype.h"
#include "tinytorch/core/tensor.h"

namespace tt::data {

// Where Debian's packages put the files.
inline constexpr const char* kDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A labelled image set on the CPU: images float32 [N, 1, H, W] scaled to [0, 1], labels int64 [N]
// in 0..C-1, and class_names[c] the name of class c (C entries).
struct ImageSet {
  Tensor images;
  Tensor labels;
  std::vector<std::string> class_names;
};

// scikit-learn's handwritten digits (UCI optdigits, test part): 1797 images of 8×8, classes "0"
// to "9". The file is a CSV (gzip or plain) of one image per line: 64 comma-separated integer
// pixels in 0..16, row by row, then the label. Pixels are divided by 16.
ImageSet load_digits(const std::string& path = kDigitsPath);

// Fashion-MNIST: 28×28 grey images of clothing (Zalando), 60000 for training, 10000 for testing,
// 10 classes (T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle
// boot). Reads DIR/train-images-idx3-ubyte and train-labels-idx1-ubyte (t10k-... for kTest),
// each as NAME.gz if present, else NAME. Pixels are divided by 255.
enum class Split { kTrain, kTest };
ImageSet load_fashion_mnist(Split split, const std::string& dir = kFashionMnistDir);

// An IDX file (the MNIST family's format, gzip or plain) of unsigned bytes (type code 0x08), of
// any rank: a tensor of the header's dims, holding the bytes' values 0..255 exactly. dtype is
// kInt64 (the default: labels, or any integer use), kFloat32 or kFloat64. int64 takes 8 bytes an
// element (376 MB for Fashion-MNIST's training images); load_fashion_mnist converts the pixels
// straight to float32 instead. Other IDX element types (signed bytes, shorts, ints, floats) are
// rejected with their name.
Tensor read_idx(const std::string& path, ScalarType dtype = kInt64);

}  // namespace tt::data
